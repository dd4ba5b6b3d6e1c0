// Explore mode: judge a hole inline; the label goes to the same store (source "explore").
(function () {
  "use strict";
  const status = document.getElementById("status");
  document.querySelectorAll("button.inline-grade").forEach(function (button) {
    button.addEventListener("click", async function () {
      status.textContent = "saving…";
      try {
        await window.searchbench.postJSON("/api/judgment", {
          query_id: button.dataset.queryId,
          doc_id: button.dataset.docId,
          grade: Number(button.dataset.grade),
          source: "explore",
          client_key: window.searchbench.clientKey(),
        });
        window.location.reload();
      } catch (err) {
        status.textContent = "not saved: " + err.message;
      }
    });
  });
})();
