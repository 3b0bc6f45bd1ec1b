// The dashboard's one script. It only adds conveniences; every form works without it.
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  // Copy buttons: <button data-copy="text">, shown only when the clipboard is available.
  for (const button of document.querySelectorAll("button[data-copy]")) {
    if (!navigator.clipboard) continue;
    button.hidden = false;
    button.addEventListener("click", async () => {
      try {
        await navigator.clipboard.writeText(button.dataset.copy);
        button.textContent = "Copied";
      } catch {
        button.textContent = "Copy failed";
      }
    });
  }

  // The new-license form: show only the expiration fields of the chosen type, and preview the
  // expiry date a duration gives.
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
        preview.textContent = "Expires on " + at.toISOString().slice(0, 10) + " (UTC) if created now.";
      } else if (type === "DURATION" && days > 0) {
        preview.textContent = "Expires " + days + " days after its first successful verification.";
      } else {
        preview.textContent = "";
      }
    };
    form.addEventListener("input", update);
    form.addEventListener("change", update);
    update();
  }
});
