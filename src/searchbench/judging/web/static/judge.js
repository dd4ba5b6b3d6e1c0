// The judging page: grades 0-3, skip, next/previous, undo, evidence from the selection.
(function () {
  "use strict";
  const root = document.getElementById("judge");
  if (!root) {
    return;
  }
  const sb = window.searchbench;
  const textEl = document.getElementById("doc-text");
  const status = document.getElementById("status");
  const note = document.getElementById("note");
  const list = document.getElementById("evidence");
  const index = Number(root.dataset.i);
  const total = Number(root.dataset.total);
  const docLength = Number(root.dataset.length);
  let evidence = JSON.parse(root.dataset.evidence || "[]");
  let busy = false;

  // The document's text exactly as stored: a line break holding "\r" is rendered as "\n"
  // (HTML normalises it), its element records how many characters it stands for.
  function originalOf(el) {
    if (el.classList.contains("br")) {
      return el.dataset.n === "2" ? "\r\n" : "\r";
    }
    return el.textContent;
  }
  const original = Array.from(textEl.children).map(originalOf).join("");

  // Offset in the stored text of a DOM selection boundary (node, offset).
  function boundary(node, offset) {
    if (node === textEl) {
      const child = textEl.children[offset];
      return child ? Number(child.dataset.o) : docLength;
    }
    const el = node.nodeType === Node.TEXT_NODE ? node.parentElement : node;
    if (!el || !el.dataset || el.dataset.o === undefined || el.parentElement !== textEl) {
      return null;
    }
    const start = Number(el.dataset.o);
    if (el.classList.contains("br")) {
      return offset > 0 ? start + Number(el.dataset.n) : start;
    }
    if (node.nodeType === Node.TEXT_NODE) {
      return start + offset;
    }
    return offset > 0 ? start + el.textContent.length : start;
  }

  function renderEvidence() {
    list.replaceChildren();
    evidence.forEach(function (q, n) {
      const item = document.createElement("li");
      const quote = document.createElement("q");
      quote.textContent = q.text;
      const where = document.createElement("span");
      where.className = "offsets";
      where.textContent = " [" + q.start + ":" + q.end + "] ";
      const remove = document.createElement("button");
      remove.type = "button";
      remove.textContent = "remove";
      remove.addEventListener("click", function () {
        evidence.splice(n, 1);
        renderEvidence();
      });
      item.append(quote, where, remove);
      list.append(item);
    });
  }

  function addSelection() {
    const sel = window.getSelection();
    if (!sel || sel.rangeCount === 0 || sel.isCollapsed) {
      status.textContent = "Select a passage of the document first.";
      return;
    }
    const range = sel.getRangeAt(0);
    let start = boundary(range.startContainer, range.startOffset);
    let end = boundary(range.endContainer, range.endOffset);
    if (start === null || end === null) {
      status.textContent = "Select inside the document text.";
      return;
    }
    while (start < end && /\s/.test(original[start])) { start++; }
    while (end > start && /\s/.test(original[end - 1])) { end--; }
    if (start >= end) {
      status.textContent = "The selection holds only white space.";
      return;
    }
    evidence.push({ start: start, end: end, text: original.slice(start, end) });
    sel.removeAllRanges();
    renderEvidence();
    status.textContent = "Evidence added; it is saved with your grade.";
  }

  function go(position) {
    window.location.assign(position === null || position === undefined ? "/" : "/judge?i=" + position);
  }

  async function judge(grade) {
    if (busy) {
      return;
    }
    busy = true;
    status.textContent = "saving…";
    try {
      const data = await sb.postJSON("/api/judgment", {
        query_id: root.dataset.queryId,
        doc_id: root.dataset.docId,
        grade: grade,
        evidence: evidence,
        note: note.value,
        client_key: sb.clientKey(),
      });
      status.textContent = "saved";
      go(data.next === null ? index : data.next);
    } catch (err) {
      status.textContent = "not saved: " + err.message;
      busy = false;
    }
  }

  async function undo() {
    if (busy) {
      return;
    }
    busy = true;
    try {
      const data = await sb.postJSON("/api/undo", {});
      if (data.undone === null) {
        status.textContent = "nothing to undo";
        busy = false;
        return;
      }
      go(data.position === null ? index : data.position);
    } catch (err) {
      status.textContent = "undo failed: " + err.message;
      busy = false;
    }
  }

  document.querySelectorAll("button[data-grade]").forEach(function (button) {
    button.addEventListener("click", function () { judge(Number(button.dataset.grade)); });
  });
  document.getElementById("skip").addEventListener("click", function () { judge(null); });
  document.getElementById("undo").addEventListener("click", undo);
  document.getElementById("add-evidence").addEventListener("click", addSelection);
  document.getElementById("next").addEventListener("click", function () {
    if (index + 1 < total) { go(index + 1); }
  });
  document.getElementById("prev").addEventListener("click", function () {
    if (index > 0) { go(index - 1); }
  });

  document.addEventListener("keydown", function (event) {
    const target = event.target;
    if (event.ctrlKey || event.metaKey || event.altKey || event.repeat ||
        (target && (target.tagName === "TEXTAREA" || target.tagName === "INPUT"))) {
      return;
    }
    const key = event.key;
    if (key >= "0" && key <= "3" && key.length === 1) {
      judge(Number(key));
    } else if (key === "s") {
      judge(null);
    } else if (key === "j") {
      if (index + 1 < total) { go(index + 1); }
    } else if (key === "k") {
      if (index > 0) { go(index - 1); }
    } else if (key === "u") {
      undo();
    } else if (key === "e") {
      addSelection();
    } else {
      return;
    }
    event.preventDefault();
  });

  renderEvidence();
})();
