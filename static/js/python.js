// The Python view's Copy button: shown wherever a script runs, in place of the words that say to
// select the code or download it. The clipboard API needs a secure origin; a school server on
// plain http:// has none, so there the hidden textarea is selected and copied instead.
(function () {
  "use strict";
  function copied(area) {
    if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(area.value);
    return new Promise(function (resolve, reject) {
      area.select();
      var done = false;
      try { done = document.execCommand("copy"); } catch (e) { done = false; }
      area.setSelectionRange(0, 0);
      if (done) resolve(); else reject();
    });
  }
  function wire(root) {
    (root || document).querySelectorAll("button[data-copy]").forEach(function (button) {
      button.hidden = false;
      var hint = button.parentNode.querySelector("[data-copy-hint]");
      if (hint) hint.hidden = true;
      button.onclick = function () {
        var said = button.parentNode.querySelector("[data-copied]");
        copied(document.getElementById(button.dataset.copy)).then(
          function () { if (said) said.textContent = "Copied: paste it into a .py file or a notebook."; },
          function () { if (said) said.textContent = "Copying did not work: select the code and copy it, or download the file."; })
          .then(function () { button.focus(); });
      };
    });
  }
  document.addEventListener("DOMContentLoaded", function () { wire(document); });
  document.addEventListener("htmx:afterSwap", function (event) { wire(event.target); });
})();

// In the editor the Python view opens in a dialog over the canvas: the keys then scroll the code
// (it has the focus), Escape or Close closes it, and the focus goes back to the toolbar's Python.
(function () {
  "use strict";
  document.addEventListener("click", function (event) {
    var dialog = document.getElementById("python-dialog");
    if (!dialog || !window.htmx) return;
    var open = event.target.closest("a[data-python]");
    if (open) {
      event.preventDefault();
      htmx.ajax("GET", open.getAttribute("href"), { target: "#python-dialog", swap: "innerHTML" })
        .then(function () {
          if (!dialog.open) dialog.showModal();
          var first = dialog.querySelector(".python-code-box") || dialog.querySelector("[data-close]");
          if (first) first.focus();
          var box = dialog.querySelector(".python-code-box");
          if (box) box.scrollTop = 0;
        });
      return;
    }
    if (event.target.closest("#python-dialog a[data-close]")) { event.preventDefault(); dialog.close(); }
  });
  document.addEventListener("close", function (event) {   // "close" does not bubble: caught on the way down
    if (event.target.id !== "python-dialog") return;
    var back = document.querySelector("a[data-python]");
    if (back) back.focus();
  }, true);
})();
