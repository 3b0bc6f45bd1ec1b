// The dashboard's one script. It only adds conveniences; every form works without it.
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  // Copy buttons: <button data-copy="text">, shown only when the clipboard is available. The
  // words they show after a click come from the page (data-copied, data-copy-failed).
  for (const button of document.querySelectorAll("button[data-copy]")) {
    if (!navigator.clipboard) continue;
    button.hidden = false;
    button.addEventListener("click", async () => {
      try {
        await navigator.clipboard.writeText(button.dataset.copy);
        button.textContent = button.dataset.copied;
      } catch {
        button.textContent = button.dataset.copyFailed;
      }
    });
  }

  // "Choose all": <input type="checkbox" data-select-all="name">, shown only with the script,
  // ticks or clears every box of that name in its form.
  for (const all of document.querySelectorAll("input[data-select-all]")) {
    const label = all.closest("[hidden]");
    if (label) label.hidden = false;
    all.addEventListener("change", () => {
      const boxes = all.form.querySelectorAll(`input[type=checkbox][name="${all.dataset.selectAll}"]`);
      for (const box of boxes) box.checked = all.checked;
    });
  }

  // Release uploads: send the form with a progress bar, then show the page the server answers
  // with (the new release, or the form with what to fix).
  const upload = document.querySelector("form[data-upload]");
  if (upload && window.XMLHttpRequest && window.FormData) {
    const bar = upload.querySelector("[data-progress]");
    upload.addEventListener("submit", (event) => {
      event.preventDefault();
      const request = new XMLHttpRequest();
      request.open("POST", upload.action);
      request.upload.addEventListener("progress", (e) => {
        if (!e.lengthComputable || !bar) return;
        bar.hidden = false;
        bar.value = Math.round((e.loaded / e.total) * 100);
      });
      request.addEventListener("load", () => {
        if (request.status < 400 && request.responseURL) {
          window.location.assign(request.responseURL);
        } else {
          document.open();
          document.write(request.responseText);
          document.close();
        }
      });
      request.addEventListener("error", () => upload.submit());
      for (const button of upload.querySelectorAll("button")) button.disabled = true;
      request.send(new FormData(upload));
    });
  }

  // The new-license form: show only the expiration fields of the chosen type, and preview the
  // expiry date a duration gives, in the page's words (data-on-date, data-after-days).
  const form = document.querySelector("form[data-expiration]");
  if (form) {
    const preview = form.querySelector("[data-expiry-preview]");
    const update = () => {
      const type = form.querySelector("input[name=expirationType]:checked")?.value;
      for (const part of form.querySelectorAll("[data-for-type]")) {
        part.hidden = part.dataset.forType !== type;
      }
      if (!preview) return;
      const days = parseInt(form.querySelector("input[name=expirationDays]")?.value, 10);
      const start = form.querySelector("input[name=expirationStart]:checked")?.value;
      if (type === "DURATION" && days > 0 && start === "CREATION") {
        const at = new Date(Date.now() + days * 86400000);
        preview.textContent = preview.dataset.onDate.replace("{date}", at.toISOString().slice(0, 10));
      } else if (type === "DURATION" && days > 0) {
        preview.textContent = preview.dataset.afterDays.replace("{days}", String(days));
      } else {
        preview.textContent = "";
      }
    };
    form.addEventListener("input", update);
    form.addEventListener("change", update);
    update();
  }
});
