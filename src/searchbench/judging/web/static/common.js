// Shared by the judging and explore pages: POST JSON with the CSRF token, retrying a
// request that got no answer with the same client key (the store records it once).
(function () {
  "use strict";
  const csrf = document.querySelector('meta[name="csrf-token"]').content;

  function clientKey() {
    const bytes = new Uint8Array(16);
    window.crypto.getRandomValues(bytes);
    return Array.from(bytes, function (b) { return b.toString(16).padStart(2, "0"); }).join("");
  }

  async function postJSON(url, body) {
    let lastError = null;
    for (let attempt = 0; attempt < 4; attempt++) {
      let response;
      try {
        response = await fetch(url, {
          method: "POST",
          credentials: "same-origin",
          headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
          body: JSON.stringify(body),
        });
      } catch (err) {
        lastError = err;
        await new Promise(function (r) { setTimeout(r, 300 * (attempt + 1)); });
        continue;
      }
      if (response.status === 401) {
        window.location.assign("/login");
        throw new Error("signed out");
      }
      const data = await response.json().catch(function () { return {}; });
      if (!response.ok) {
        throw new Error(data.error || ("HTTP " + response.status));
      }
      return data;
    }
    throw new Error("no answer from the app: " + lastError);
  }

  window.searchbench = { postJSON: postJSON, clientKey: clientKey };
})();
