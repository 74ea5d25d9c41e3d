// The Python view's Copy button: shown only where a script can copy; without one the code is
// plain text to select.
(function () {
  "use strict";
  function wire(root) {
    (root || document).querySelectorAll("button[data-copy]").forEach(function (button) {
      if (!navigator.clipboard) return;
      button.hidden = false;
      button.onclick = function () {
        var text = document.getElementById(button.dataset.copy).value;
        var said = button.parentNode.querySelector("[data-copied]");
        navigator.clipboard.writeText(text).then(function () { if (said) said.textContent = "Copied."; },
          function () { if (said) said.textContent = "Copying did not work: select the code and copy it."; });
      };
    });
  }
  document.addEventListener("DOMContentLoaded", function () { wire(document); });
  document.addEventListener("htmx:afterSwap", function (event) { wire(event.target); });
})();

// In the editor the Python view opens in a dialog over the canvas; its Close closes the dialog.
(function () {
  "use strict";
  document.addEventListener("click", function (event) {
    var dialog = document.getElementById("python-dialog");
    if (!dialog || !window.htmx) return;
    var open = event.target.closest("a[data-python]");
    if (open) {
      event.preventDefault();
      htmx.ajax("GET", open.getAttribute("href"), { target: "#python-dialog", swap: "innerHTML" })
        .then(function () { if (!dialog.open) dialog.showModal(); });
      return;
    }
    if (event.target.closest("#python-dialog a[data-close]")) { event.preventDefault(); dialog.close(); }
  });
})();
