/* The full-size viewers over the canvas (issue 17, reference §14): editor.js loads this file
   only when a card's "View full" / "Open detailed view" is used. The viewer is a <dialog> on
   <body> (it does not move with the canvas, and the canvas's re-renders, zoom and Auto layout
   do not touch it) around an <iframe> of the viewer's frame page, which draws with plotly under
   a Content-Security-Policy of its own (apps/editor/views/viewers.viewer_frame): the editor's
   page stays strict and never loads plotly. Esc (here, or in the frame, which says so by a
   message), × and a click outside close it. Without JavaScript the same button is a link to
   the viewer's own page. */
(function () {
  "use strict";
  var CLOSE = "codefy-viewer:close";   // what the frame posts on Esc (static/js/viewer-frame.js)

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "class") e.className = attrs[k]; else e.setAttribute(k, attrs[k]);
    });
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function open(link) {
    var what = link.dataset.viewer === "scatter" ? "embedding scatter"
                                                 : "attention " + (link.dataset.mask === "1" ? "mask" : "weights");
    var title = link.dataset.label + " · " + what;
    var d = el("dialog", { class: "viewer", "aria-label": title });
    var head = el("header");
    head.appendChild(el("h2", {}, title));
    var close = el("button", { type: "button", class: "viewer-close", "aria-label": "Close viewer" }, "×");
    head.appendChild(close);
    var frame = el("iframe", { class: "viewer-iframe", title: title, src: link.dataset.frame });
    var box = el("div", { class: "viewer-frame" });
    box.appendChild(head); box.appendChild(frame);
    d.appendChild(box);
    document.body.appendChild(d);
    function onMessage(event) {
      if (event.origin === window.location.origin && event.source === frame.contentWindow &&
          event.data && event.data.type === CLOSE) d.close();
    }
    window.addEventListener("message", onMessage);
    close.addEventListener("click", function () { d.close(); });
    d.addEventListener("click", function (event) { if (event.target === d) d.close(); });  // the backdrop
    d.addEventListener("close", function () { window.removeEventListener("message", onMessage); d.remove(); });
    d.showModal();
    return d;
  }

  window.CodefyViewers = { open: open };
})();
