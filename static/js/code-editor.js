// The Code pane's script editor: a plain textarea that works without this file. With it,
// Tab indents (Shift+Tab outdents) by four spaces, Enter keeps the line's indentation (one
// level more after a colon), and the line numbers beside it follow what is typed.
// Delegated from the document, so a Code pane swapped in later (Node details) needs nothing more.
(function () {
  "use strict";
  var INDENT = "    ";

  function isEditor(el) { return el && el.matches && el.matches("textarea[data-code-editor]"); }

  function replace(area, start, end, text, caret) {
    area.setRangeText(text, start, end, "end");
    if (caret !== undefined) area.setSelectionRange(caret, caret);
    area.dispatchEvent(new Event("input", { bubbles: true }));
  }

  function lineStart(value, pos) { return value.lastIndexOf("\n", pos - 1) + 1; }

  function onKey(event) {
    var area = event.target;
    if (!isEditor(area) || event.ctrlKey || event.metaKey || event.altKey) return;
    var value = area.value, start = area.selectionStart, end = area.selectionEnd;
    if (event.key === "Tab" && start === end) {
      // Esc then Tab still leaves the field for keyboard users (the key is not taken after Esc).
      if (area.dataset.escaped === "1") { area.dataset.escaped = ""; return; }
      event.preventDefault();
      if (event.shiftKey) {
        var from = lineStart(value, start), line = value.slice(from, from + INDENT.length);
        var strip = line.length - line.replace(/^ +/, "").length;
        if (strip) replace(area, from, from + strip, "", start - strip);
      } else {
        replace(area, start, end, INDENT);
      }
    } else if (event.key === "Enter" && start === end) {
      var begin = lineStart(value, start), current = value.slice(begin, start);
      var indent = current.match(/^ */)[0] + (/:\s*$/.test(current) ? INDENT : "");
      event.preventDefault();
      replace(area, start, end, "\n" + indent);
    } else if (event.key === "Escape") {
      area.dataset.escaped = "1";
    }
  }

  function onInput(event) {
    var area = event.target;
    if (!isEditor(area)) return;
    var gutter = area.parentNode.querySelector(".code-lines");
    var count = area.value.split("\n").length;
    area.rows = count + 1;
    if (!gutter || gutter.children.length === count) return;
    while (gutter.children.length < count) {
      var item = document.createElement("li");
      item.textContent = String(gutter.children.length + 1);
      gutter.appendChild(item);
    }
    while (gutter.children.length > count) gutter.removeChild(gutter.lastChild);
  }

  document.addEventListener("keydown", onKey);
  document.addEventListener("input", onInput);
})();
