/* The editor's only script: what needs one. Every action here posts the same forms the
   page offers without JavaScript; the server stays the single source of truth. It builds no
   URL itself: the page names each one in a data attribute (data-url, data-add-url,
   data-connect-url on #editor; data-move-url, data-details-url on a card; data-summary-url
   on an edge; data-activate-url on a segment's bubble), with the page state already in it. */
(function () {
  "use strict";
  var zoom = 1;
  var armed = null;          // {node, port, type} of an output waiting for its input
  var quickPoint = null;     // where a double-click asked to add a node
  var DRAG_THRESHOLD = 4;

  function editor() { return document.getElementById("editor"); }
  function tabId() { return editor() && editor().dataset.tab; }
  function csrf() { var t = document.querySelector("[name=csrfmiddlewaretoken]"); return t ? t.value : ""; }

  function post(url, values) {
    if (!url) return;  // a read-only look has no edit URLs: a drag, a drop or a wire changes nothing
    values = Object.assign({ csrfmiddlewaretoken: csrf(), _state: editor().dataset.state || "",
                           _revision: editor().dataset.revision || "" }, values);
    return htmx.ajax("POST", url, { target: "#editor", swap: "outerHTML", values: values });
  }
  function refresh() {  // re-render the editor as it stands (its state kept)
    htmx.ajax("GET", editor().dataset.url, { target: "#editor", swap: "outerHTML" });
  }

  // Where script moves things (a dragged card, the zoom, a menu) is kept in a stylesheet of
  // its own, never in a style attribute: the Content-Security-Policy refuses those, and
  // htmx copies an element's old attributes onto its new self when it swaps.
  var live = new CSSStyleSheet(), liveRules = {};
  document.adoptedStyleSheets = document.adoptedStyleSheets.concat([live]);
  function place(selector, declarations) {
    if (declarations) liveRules[selector] = declarations; else delete liveRules[selector];
    live.replaceSync(Object.keys(liveRules).map(function (s) { return s + " { " + liveRules[s] + " }"; }).join("\n"));
  }
  function at(x, y) { return "left: " + x + "px; top: " + y + "px"; }

  function canvasPoint(event) {
    var rect = document.getElementById("canvas").getBoundingClientRect();
    return { x: (event.clientX - rect.left) / zoom, y: (event.clientY - rect.top) / zoom };
  }

  // -- dragging nodes ---------------------------------------------------------------------
  var drag = null;
  document.addEventListener("pointerdown", function (event) {
    var header = event.target.closest(".card > header");
    if (!header || event.button !== 0 || event.target.closest(".port")) return;
    var card = header.parentElement;
    drag = { card: card, selector: "#" + CSS.escape(card.id), startX: event.clientX, startY: event.clientY,
             left: card.offsetLeft, top: card.offsetTop, x: card.offsetLeft, y: card.offsetTop, moved: false };
  });
  document.addEventListener("pointermove", function (event) {
    if (!drag) return;
    var dx = (event.clientX - drag.startX) / zoom, dy = (event.clientY - drag.startY) / zoom;
    if (!drag.moved && Math.abs(dx) + Math.abs(dy) < DRAG_THRESHOLD) return;
    drag.moved = true;
    drag.x = Math.max(0, drag.left + dx); drag.y = Math.max(0, drag.top + dy);
    place(drag.selector, at(drag.x, drag.y));
  });
  document.addEventListener("pointerup", function () {
    if (!drag) return;
    var d = drag; drag = null;
    if (!d.moved || !d.card.dataset.moveUrl) return;  // cards inside a block stay put
    d.card.dataset.justDragged = "1";
    post(d.card.dataset.moveUrl, { x: Math.round(d.x), y: Math.round(d.y) })
      .then(function () { place(d.selector, null); });  // the page now has the card where it was dropped
  });
  document.addEventListener("click", function (event) {
    var card = event.target.closest(".card");
    if (card && card.dataset.justDragged) { event.preventDefault(); event.stopPropagation(); delete card.dataset.justDragged; }
  }, true);

  // -- adding nodes: drag from the sidebar, or double-click the canvas then pick ----------
  document.addEventListener("dragstart", function (event) {
    var item = event.target.closest && event.target.closest(".palette-item");
    if (item) event.dataTransfer.setData("text/codefyui-node", item.dataset.type);
  });
  document.addEventListener("dragover", function (event) {
    if (event.target.closest && event.target.closest("#canvas-wrap")) event.preventDefault();
  });
  document.addEventListener("drop", function (event) {
    var type = event.dataTransfer.getData("text/codefyui-node");
    if (!type || !event.target.closest("#canvas-wrap")) return;
    event.preventDefault();
    var p = canvasPoint(event);
    post(editor().dataset.addUrl, { type: type, x: Math.round(p.x - 92), y: Math.round(p.y - 15) });
  });
  document.addEventListener("dblclick", function (event) {
    if (!event.target.closest("#canvas-wrap") || event.target.closest(".card")) return;
    quickPoint = canvasPoint(event);
    var search = document.getElementById("node-search");
    if (search) { search.focus(); search.select(); }
  });
  document.addEventListener("submit", function (event) {
    var form = event.target;
    var width = form.querySelector("[data-canvas-width]");  // Auto layout wraps to the canvas shown
    if (width) width.value = Math.round(document.getElementById("canvas-wrap").clientWidth / zoom);
    if (quickPoint && form.classList.contains("palette")) {
      ["x", "y"].forEach(function (k) {
        var input = form.querySelector("[name=" + k + "]") || form.appendChild(Object.assign(document.createElement("input"), { type: "hidden", name: k }));
        input.value = Math.round(quickPoint[k]);
      });
      quickPoint = null;
    }
  }, true);

  // -- click an output, then an input, to connect -----------------------------------------
  document.addEventListener("click", function (event) {
    var port = event.target.closest(".port");
    if (!port) {
      var target = event.target.closest(".card");
      if (armed && armed.type === "TRIGGER" && target && target.dataset.node !== armed.node) {
        event.preventDefault();
        connect(target.dataset.node, "");
      }
      return;
    }
    var node = port.closest(".card").dataset.node;
    if (port.dataset.side === "out") {
      disarm();
      armed = { node: node, port: port.dataset.port, type: port.dataset.type };
      port.classList.add("armed");
      port.setAttribute("aria-pressed", "true");
      hint(port.getAttribute("aria-label") + (armed.type === "TRIGGER"
        ? " is picked: now click the node it should start (Esc cancels)."
        : " is picked: now click an input (a dot on the left of a node) to connect it (Esc cancels)."));
    } else if (armed) {
      connect(node, port.dataset.port);
    }
  });
  function connect(target, targetPort) {
    var a = armed; disarm();
    post(editor().dataset.connectUrl, { source: a.node, source_port: a.port, target: target, target_port: targetPort });
  }
  function hint(text) {
    var p = document.getElementById("connect-hint");
    if (p) p.textContent = text;
  }
  function disarm() {
    armed = null;
    hint("");
    document.querySelectorAll(".port.armed").forEach(function (p) { p.classList.remove("armed"); p.setAttribute("aria-pressed", "false"); });
  }

  // -- Shift-click selects several nodes (segments build on this), never text --------------
  document.addEventListener("mousedown", function (event) {
    if (event.shiftKey && event.target.closest(".card")) event.preventDefault();
  });
  document.addEventListener("click", function (event) {
    var card = event.target.closest(".card");
    if (!card || !event.shiftKey) return;
    event.preventDefault();
    event.stopPropagation();  // a Shift-click on the node's name selects it too: the link (and htmx) never sees it
    card.classList.toggle("multi");
    var label = card.getAttribute("aria-label").replace(/, selected$/, "");
    card.setAttribute("aria-label", card.classList.contains("multi") ? label + ", selected" : label);
    offerSegment();
  }, true);
  function offerSegment() {
    var form = document.getElementById("segment-form");
    if (!form) return;
    var picked = document.querySelectorAll(".card.multi");
    form.querySelectorAll("[name=node]").forEach(function (i) { i.remove(); });
    picked.forEach(function (card) {
      form.appendChild(Object.assign(document.createElement("input"), { type: "hidden", name: "node", value: card.dataset.node }));
    });
    form.hidden = picked.length !== 2;
  }
  // A bubble's border makes that segment the active one.
  document.addEventListener("click", function (event) {
    var bubble = event.target.closest && event.target.closest("g.bubble");
    if (bubble && bubble.dataset.activateUrl && !bubble.classList.contains("active")) post(bubble.dataset.activateUrl, {});
  });

  // -- keyboard shortcuts (ignored while typing) ------------------------------------------
  document.addEventListener("keydown", function (event) {
    if (!tabId() || event.target.closest("input, textarea, select, [contenteditable]")) return;
    var key = event.key.toLowerCase(), mod = event.ctrlKey || event.metaKey;
    var click = function (id) { var b = document.getElementById(id); if (b && !b.disabled) { event.preventDefault(); b.click(); } };
    if (mod && key === "z" && !event.shiftKey) click("undo-button");
    else if (mod && (key === "y" || (key === "z" && event.shiftKey))) click("redo-button");
    else if (!mod && event.shiftKey && key === "l") click("layout-button");
    else if (key === "escape") disarm();
    else if (key === "delete") {
      var ids = Array.prototype.map.call(document.querySelectorAll(".card.multi, .card.selected"), function (c) { return c.dataset.node; });
      if (ids.length) { event.preventDefault(); deleteNodes(ids); }
    }
  });
  function deleteNodes(ids) {
    var form = document.getElementById("delete-form");
    if (!form) return;
    form.querySelectorAll("[name=node]").forEach(function (i) { i.remove(); });
    ids.forEach(function (id) {
      form.appendChild(Object.assign(document.createElement("input"), { type: "hidden", name: "node", value: id }));
    });
    form.requestSubmit();
  }

  // -- zoom with Ctrl + wheel (pan is the canvas's own scrolling) -------------------------
  document.addEventListener("wheel", function (event) {
    if (!event.ctrlKey || !event.target.closest("#canvas-wrap")) return;
    event.preventDefault();
    zoom = Math.min(2, Math.max(0.3, zoom * Math.exp(-event.deltaY * 0.0015)));
    applyZoom();
  }, { passive: false });
  function applyZoom() { place("#canvas", zoom === 1 ? null : "transform: scale(" + zoom + ")"); }

  // -- pushed progress: tell waiting Inspector rows their node (or the run) finished --------
  // Read the statuses from the message itself: htmx settles a swapped element's class later.
  var FINISHED = /badge-(completed|cached|error|skipped)/;
  document.addEventListener("htmx:wsAfterMessage", function (event) {
    var t = document.createElement("template");
    t.innerHTML = event.detail.message;
    t.content.querySelectorAll("[id^='badge-']").forEach(function (b) {
      if (!FINISHED.test(b.className)) return;
      var node = b.id.slice(6);
      document.querySelectorAll("[data-waits-for]").forEach(function (row) {
        if (row.dataset.waitsFor === node) htmx.trigger(row, "node-finished");
      });
    });
    // A training node's pushed bar: its Training pane re-fetches itself (throttled by htmx).
    t.content.querySelectorAll("[id^='progress-']").forEach(function (bar) {
      var node = bar.id.slice(9);
      document.querySelectorAll("[data-progress-of]").forEach(function (pane) {
        if (pane.dataset.progressOf === node) htmx.trigger(pane, "node-progress");
      });
    });
    var status = t.content.querySelector("#run-status");
    if (status && /status-(succeeded|failed|cancelled)/.test(status.className)) {
      // The run is over: re-render the editor so everything (Stop, Runs panel, Backward…) is current.
      refresh();
    }
  });

  // -- the Execution Log shows its newest rows: at its end when drawn, and following the rows
  // pushed while its reader is at the end (one who scrolled up to read stays where they are) --
  function logBox() { var log = document.getElementById("log"); return log && log.closest("details"); }
  function toLogEnd() { var box = logBox(); if (box) box.scrollTop = box.scrollHeight; }
  var logAtEnd = true;
  document.addEventListener("htmx:wsBeforeMessage", function () {
    var box = logBox();
    logAtEnd = !box || box.scrollHeight - box.scrollTop - box.clientHeight < 4;
  });
  document.addEventListener("htmx:wsAfterMessage", function () { if (logAtEnd) toLogEnd(); });
  htmx.onLoad(function (content) {   // the page, and every re-render of the editor
    if (content.id === "log" || (content.querySelector && content.querySelector("#log"))) toLogEnd();
  });

  // -- Node details: a modal dialog over the editor ----------------------------------------
  function dialog() { return document.getElementById("details-dialog"); }
  function openDetails(url) {
    // A click on the title re-renders the editor, dialog included: wait for that first, and
    // take the dialog that is there once the details have arrived.
    if (document.querySelector(".htmx-request")) {
      document.addEventListener("htmx:afterSettle", function () { openDetails(url); }, { once: true });
      return;
    }
    if (!dialog()) { window.location = url; return; }
    htmx.ajax("GET", url, { target: "#details-dialog", swap: "innerHTML" }).then(function () {
      var d = dialog();
      if (d && !d.open) d.showModal();
      enableRename();
    });
  }
  function enableRename() {
    var button = document.querySelector("#details .name-button"), form = document.querySelector("#details .rename-form");
    if (!button || !form) return;
    button.hidden = false; form.hidden = true;
    var plain = document.querySelector("#details .name-text");  // the heading's text without a script
    if (plain) plain.hidden = true;
  }
  function cancelRename(input) {
    input.value = input.defaultValue;
    enableRename();
    // Back to the name the rename began from: focus must not stay on the hidden field.
    document.querySelector("#details .name-button").focus();
  }
  document.addEventListener("htmx:afterSwap", function (event) { if (event.target.closest && event.target.closest("#details-dialog")) enableRename(); });
  document.addEventListener("click", function (event) {
    var link = event.target.closest("a[data-details]");
    if (link && dialog()) { event.preventDefault(); hideEdge(); openDetails(link.getAttribute("href")); return; }
    var close = event.target.closest("#details-dialog a[data-close]");
    if (close) { event.preventDefault(); dialog().close(); return; }
    var name = event.target.closest("#details .name-button");
    if (name) {
      var form = document.querySelector("#details .rename-form");
      name.hidden = true; form.hidden = false;
      var input = form.querySelector("input[name=label]"); input.focus(); input.select();
    }
  });
  document.addEventListener("dblclick", function (event) {
    var card = event.target.closest(".card");
    if (card && tabId()) { event.preventDefault(); openDetails(card.dataset.detailsUrl); }
  });
  document.addEventListener("keydown", function (event) {
    var d = dialog();
    if (d && d.open) {
      var typing = event.target.closest("input, textarea, select");
      if (typing && event.key === "Escape" && event.target.name === "label") {  // cancel the rename
        event.preventDefault(); cancelRename(event.target); return;
      }
      if (typing) return;
      var step = event.key === "ArrowLeft" ? "previous" : event.key === "ArrowRight" ? "next" : null;
      var link = step && d.querySelector("a[data-step=" + step + "]");
      if (link) {
        event.preventDefault();
        htmx.ajax("GET", link.getAttribute("hx-get"), { target: "#details", swap: "outerHTML" }).then(enableRename);
      }
      return;
    }
    if (event.key === "Enter" && tabId() && !event.target.closest("input, textarea, select, button, a")) {
      var selected = document.querySelector(".card.selected");
      if (selected) { event.preventDefault(); openDetails(selected.dataset.detailsUrl); }
    }
    if (event.key === "Escape") { hideEdge(); hideMenu(); }
  });
  document.addEventListener("close", function (event) {
    if (event.target === dialog()) refresh();  // show what the dialog changed (a rename, new params)
  }, true);

  // -- a viewer node's "View full" / "Open detailed view" (a double-click on the scatter's
  // picture too): the full-size viewer over the canvas. Its script (and plotly) load only now.
  var viewerScript = null;
  function openViewer(link) {
    viewerScript = viewerScript || new Promise(function (resolve, reject) {
      var s = document.createElement("script");
      s.src = link.dataset.script; s.onload = resolve;
      s.onerror = function () { viewerScript = null; reject(); };
      document.head.appendChild(s);
    });
    viewerScript.then(function () { window.CodefyViewers.open(link); }, function () { window.location = link.href; });
  }
  document.addEventListener("click", function (event) {
    var link = event.target.closest("a.viewer-open[data-viewer]");
    if (link) { event.preventDefault(); event.stopPropagation(); openViewer(link); }
  }, true);
  document.addEventListener("dblclick", function (event) {
    var card = event.target.closest("[data-viewer-card]");
    var link = card && card.querySelector("a.viewer-open[data-viewer=scatter]");
    if (link) { event.preventDefault(); event.stopPropagation(); openViewer(link); }
  }, true);

  // -- right-click a node: Open details ------------------------------------------------------
  var menuCard = null;
  function hideMenu() { var m = document.getElementById("context-menu"); if (m) m.hidden = true; }
  document.addEventListener("contextmenu", function (event) {
    var card = event.target.closest(".card"), menu = document.getElementById("context-menu");
    if (!card || !menu) return;
    event.preventDefault();
    menuCard = card;
    place("#context-menu", at(Math.min(event.clientX, window.innerWidth - 160),  // inside the window
                              Math.min(event.clientY, window.innerHeight - 48)));
    menu.hidden = false;
    menu.querySelector("button").focus();
  });
  document.addEventListener("click", function (event) {
    if (event.target.closest("[data-open-details]")) { hideMenu(); openDetails(menuCard.dataset.detailsUrl); }
    else if (!event.target.closest("#context-menu")) hideMenu();
  });

  // -- click an edge after a run: what flowed through it -------------------------------------
  function hideEdge() { var p = document.getElementById("edge-popover"); if (p) p.hidden = true; }
  document.addEventListener("click", function (event) {
    var path = event.target.closest && event.target.closest("path.edge:not(.trigger), a[data-edge-link]");
    var popover = document.getElementById("edge-popover");
    if (!path || !popover) { if (popover && !event.target.closest("#edge-popover")) hideEdge(); return; }
    var link = path.tagName === "A";  // the node panel's list of connections: the keyboard's way in
    var url = link ? path.getAttribute("href") : path.dataset.summaryUrl;
    if (!url) return;  // an edge inside a block has no summary of its own
    if (link) event.preventDefault();
    var from = link ? path.getBoundingClientRect() : { left: event.clientX, bottom: event.clientY };
    place("#edge-popover", at(Math.min(from.left, window.innerWidth - 400),  // inside the window
                              Math.min(from.bottom, window.innerHeight - 260)));
    htmx.ajax("GET", url, { target: "#edge-popover", swap: "innerHTML" }).then(function () {
      popover.hidden = false;
      var first = popover.querySelector("a");
      if (link && first) first.focus();
    });
  });
  document.addEventListener("click", function (event) {
    if (event.target.closest("#edge-popover a[data-close]")) { event.preventDefault(); hideEdge(); }
  });

  // Auto-synthesize loss is available only while Capture gradients is on (the server says so
  // too: it saves it off without Capture gradients); the box follows the switch at once.
  document.addEventListener("change", function (event) {
    if (event.target.name !== "capture_gradients") return;
    var auto = event.target.form.querySelector("[name=auto_synthesize_loss]");
    if (!auto) return;
    auto.disabled = !event.target.checked;
    if (!event.target.checked) auto.checked = false;
  });
})();
