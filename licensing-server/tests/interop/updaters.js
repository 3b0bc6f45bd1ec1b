// Reads what the server's update feeds serve with the updaters' own code, for the tests in
// tests/api/updates.rs. Prints one JSON object.
//
//   node updaters.js electron <channel file URL> <license key>
//     electron-updater's parseUpdateInfo and resolveFiles read the YAML; each file is
//     downloaded and its SHA-512 and size compared with what the file says.
//   node updaters.js sparkle <appcast URL> <license key or -> <SUPublicEDKey (base64)>
//     feedparser reads the appcast; each enclosure is downloaded and its sparkle:edSignature
//     checked with Node's own Ed25519 (OpenSSL).
"use strict";
const crypto = require("crypto");
const { Readable } = require("stream");

const [mode, url, key, publicKey] = process.argv.slice(2);
const headers = key && key !== "-" ? { Authorization: `License ${key}` } : {};

async function fetchBytes(address) {
  const response = await fetch(address, { headers });
  if (!response.ok) throw new Error(`${address}: HTTP ${response.status}`);
  return Buffer.from(await response.arrayBuffer());
}

async function electron() {
  const { parseUpdateInfo, resolveFiles } = require("electron-updater/out/providers/Provider");
  const raw = (await fetchBytes(url)).toString("utf8");
  const channelFile = new URL(url).pathname.split("/").pop();
  const info = parseUpdateInfo(raw, channelFile, new URL(url));
  const files = [];
  for (const resolved of resolveFiles(info, new URL(url))) {
    const bytes = await fetchBytes(resolved.url.href);
    const sha512 = crypto.createHash("sha512").update(bytes).digest("base64");
    files.push({
      url: resolved.url.href,
      size: resolved.info.size,
      sha512Matches: sha512 === resolved.info.sha512,
      sizeMatches: bytes.length === resolved.info.size,
    });
  }
  return { version: info.version, releaseDate: info.releaseDate, files };
}

async function sparkle() {
  const FeedParser = require("feedparser");
  const xml = await fetchBytes(url);
  const items = await new Promise((resolve, reject) => {
    const parser = new FeedParser();
    const read = [];
    parser.on("error", reject);
    parser.on("readable", function () {
      let item;
      while ((item = this.read())) read.push(item);
    });
    parser.on("end", () => resolve(read));
    Readable.from([xml]).pipe(parser);
  });
  const der = Buffer.concat([
    Buffer.from("302a300506032b6570032100", "hex"),
    Buffer.from(publicKey, "base64"),
  ]);
  const keyObject = crypto.createPublicKey({ key: der, format: "der", type: "spki" });
  const out = [];
  for (const item of items) {
    const enclosure = item["rss:enclosure"]["@"];
    const bytes = await fetchBytes(enclosure.url);
    const signature = enclosure["sparkle:edsignature"];
    out.push({
      version: item["sparkle:version"]["#"],
      channel: item["sparkle:channel"] ? item["sparkle:channel"]["#"] : null,
      critical: "sparkle:criticalupdate" in item,
      url: enclosure.url,
      lengthMatches: Number(enclosure.length) === bytes.length,
      signatureVerifies: signature
        ? crypto.verify(null, bytes, keyObject, Buffer.from(signature, "base64"))
        : false,
    });
  }
  return { items: out };
}

(mode === "electron" ? electron() : sparkle())
  .then((result) => process.stdout.write(JSON.stringify(result)))
  .catch((e) => {
    process.stderr.write(String(e && e.stack ? e.stack : e));
    process.exit(1);
  });
