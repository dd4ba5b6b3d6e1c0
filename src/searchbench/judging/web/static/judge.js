// The judging page: grades 0-3, skip, next/previous, undo, evidence from the selection,
// n / N to scroll to the next / previous highlighted query term; /done after the last item.
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
  let evidence = JSON.parse(root.dataset.evidence || "[]");
  let busy = false;

  // The document's text exactly as stored: a line break holding "\r" is rendered as "\n"
  // (HTML normalises it), its element records how many characters it stands for.
  // NUL characters (which HTML drops) are shown as symbols; their element says how many.
  function originalOf(el) {
    if (el.classList.contains("br")) {
      return el.dataset.n === "2" ? "\r\n" : "\r";
    }
    if (el.classList.contains("nul")) {
      return "\u0000".repeat(Number(el.dataset.n));
    }
    return el.textContent;
  }
  const original = Array.from(textEl.children).map(originalOf).join("");

  // Offsets: the server counts characters (data-o, code points), a JavaScript string
  // counts UTF-16 units (a character outside the BMP, e.g. an emoji, is two). The page
  // works in units and converts to characters when it sends a quote.
  const unitStart = new Map();
  Array.from(textEl.children).reduce(function (units, el) {
    unitStart.set(el, units);
    return units + originalOf(el).length;
  }, 0);
  function toCharacters(units) {
    return Array.from(original.slice(0, units)).length;
  }

  // Offset in the stored text of a DOM selection boundary (node, offset).
  function boundary(node, offset) {
    if (node === textEl) {
      const child = textEl.children[offset];
      return child ? unitStart.get(child) : original.length;
    }
    const el = node.nodeType === Node.TEXT_NODE ? node.parentElement : node;
    if (!el || !unitStart.has(el)) {
      return null;
    }
    const start = unitStart.get(el);
    if (el.classList.contains("br") || el.classList.contains("nul")) {
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
    evidence.push({ start: toCharacters(start), end: toCharacters(end),
                    text: original.slice(start, end) });
    sel.removeAllRanges();
    renderEvidence();
    status.textContent = "Evidence added; it is saved with your grade.";
  }

  function go(position) {
    window.location.assign(position === null || position === undefined ? "/done" : "/judge?i=" + position);
  }

  // Highlighted query terms, in document order; "current" is the one last jumped to.
  const marks = Array.from(textEl.querySelectorAll("mark"));
  const matchStatus = document.getElementById("match-status");
  let current = -1;

  function visible(el) {
    const r = el.getBoundingClientRect();
    return r.bottom > 0 && r.top < window.innerHeight;
  }

  function jump(step) {
    if (marks.length === 0) {
      matchStatus.textContent = "No highlighted query term in this document.";
      return;
    }
    let next;
    if (current >= 0 && visible(marks[current])) {
      next = (current + step + marks.length) % marks.length;
    } else if (step > 0) {  // from where the reader is: the first match below the top
      next = marks.findIndex(function (m) { return m.getBoundingClientRect().top > 1; });
      next = next < 0 ? 0 : next;
    } else {
      next = marks.length - 1;
      while (next > 0 && marks[next].getBoundingClientRect().top >= 0) { next--; }
    }
    if (current >= 0) { marks[current].classList.remove("current-match"); }
    current = next;
    marks[current].classList.add("current-match");
    marks[current].scrollIntoView({ block: "center" });
    matchStatus.textContent = "match " + (current + 1) + " of " + marks.length;
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
      go(data.next);
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
    go(index + 1 < total ? index + 1 : null);
  });
  document.getElementById("next-match").addEventListener("click", function () { jump(1); });
  document.getElementById("prev-match").addEventListener("click", function () { jump(-1); });
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
      go(index + 1 < total ? index + 1 : null);
    } else if (key === "n") {
      jump(1);
    } else if (key === "N") {
      jump(-1);
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
