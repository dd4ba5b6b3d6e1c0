// Sign in with the token in the URL fragment (never sent to the server by the browser,
// never in Referer), then drop it from the address bar and history.
(function () {
  "use strict";
  const status = document.getElementById("login-status");
  const match = /(?:^#|&)token=([^&]+)/.exec(window.location.hash);
  if (!match) {
    return;
  }
  const token = decodeURIComponent(match[1]);
  window.history.replaceState(null, "", "/login");
  fetch("/session", {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ token: token }),
  }).then(function (response) {
    if (response.ok) {
      window.location.replace("/");
    } else {
      status.textContent = "This URL is not valid (any more): ask for a new one.";
    }
  }).catch(function () {
    status.textContent = "The judging app does not answer: is it still running?";
  });
})();
