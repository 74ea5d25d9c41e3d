/* The full-size viewers over the canvas (issue 17, reference §14): the attention heatmap and
   the embedding scatter, drawn as SVG. editor.js loads this file only when a card's
   "View full" / "Open detailed view" is used. (plotly 4.1 was tried and refused by the
   page's Content-Security-Policy: it writes style attributes and data: images; see
   docs/architecture.md, "Viewers".) The numbers come from the
   outputs JSON API (data-data, with node_id, port and max_elements), owner-checked there.
   The viewer is a <dialog> on <body>: it does not move with the canvas, and the canvas's
   re-renders (zoom, Auto layout) do not touch it. Without JavaScript the same button is a
   link to the viewer's own page. The colour stops and the rules (row normalisation, causal
   stripes, the 60 nearest, zoom 25 %–50 000 %) are apps/inspector/viewers.py's. */
(function () {
  "use strict";
  var STOPS = {
    viridis: ["#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c", "#28ae80", "#5ec962", "#addc30", "#fde725"],
    blues: ["#f7fbff", "#deebf7", "#c6dbef", "#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c", "#08306b"],
    RdBu: ["#67001f", "#b2182b", "#d6604d", "#f4a582", "#fddbc7", "#f7f7f7", "#d1e5f0", "#92c5de", "#4393c3", "#2166ac", "#053061"]
  };
  var PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                 "#bcbd22", "#17becf", "#393b79", "#ad494a"];
  var NEAREST = 60, ZOOM_MIN = 25, ZOOM_MAX = 50000, ZOOM_STEP = 1.4, FIT = 0.88, LABELS = 16;
  var CLOSE_HINT = "click outside or press Esc to close";

  var SVG = "http://www.w3.org/2000/svg";
  function svg(tag, attrs, text) {
    var e = document.createElementNS(SVG, tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function tip(node, text) { node.appendChild(svg("title", {}, text)); return node; }
  function colour(name, x) {
    var stops = STOPS[name] || STOPS.viridis;
    x = isFinite(x) ? Math.min(1, Math.max(0, x)) : 0;
    var pos = x * (stops.length - 1), i = Math.min(Math.floor(pos), stops.length - 2), t = pos - i;
    var hex = function (c, k) { return parseInt(c.substr(k, 2), 16); };
    return "#" + [1, 3, 5].map(function (k) {
      var v = Math.round(hex(stops[i], k) * (1 - t) + hex(stops[i + 1], k) * t);
      return (v < 16 ? "0" : "") + v.toString(16);
    }).join("");
  }

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "class") e.className = attrs[k]; else e.setAttribute(k, attrs[k]);
    });
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function fetchPort(link, port, max) {
    var url = link.dataset.data + "?node_id=" + encodeURIComponent(link.dataset.node) + "&port=" +
              encodeURIComponent(port) + "&max_elements=" + max;
    return fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } }).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (body) { return { ok: r.ok, status: r.status, body: body }; });
    });
  }
  function labelsOf(link, port) {
    if (!port) return Promise.resolve(null);
    return fetchPort(link, port, 200000).then(function (a) {
      return a.ok && a.body.type === "list" && a.body.values ? a.body.values.map(String) : null;
    }, function () { return null; });  // labels that fail to load: unlabelled
  }
  function gone(answer) { return answer.status === 404 && /no longer held|not found/.test(answer.body.detail || ""); }

  // -- the dialog ---------------------------------------------------------------------------
  function dialog(title) {
    var d = el("dialog", { class: "viewer", "aria-label": title });
    var frame = el("div", { class: "viewer-frame" });
    var head = el("header");
    head.appendChild(el("h2", {}, title));
    var tools = el("div", { class: "viewer-tools" });
    head.appendChild(tools);
    var close = el("button", { type: "button", class: "viewer-close", "aria-label": "Close viewer" }, "×");
    head.appendChild(close);
    var body = el("div", { class: "viewer-body" });
    var status = el("p", { class: "viewer-status", role: "status" });
    var footer = el("footer", { class: "viewer-footer" });
    var note = el("span", { class: "viewer-note" });
    footer.appendChild(note);
    footer.appendChild(el("span", { class: "hint" }, CLOSE_HINT));
    frame.appendChild(head); frame.appendChild(status); frame.appendChild(body); frame.appendChild(footer);
    d.appendChild(frame);
    document.body.appendChild(d);
    close.addEventListener("click", function () { d.close(); });
    d.addEventListener("click", function (event) { if (event.target === d) d.close(); });  // the backdrop
    d.addEventListener("close", function () { d.remove(); });
    d.showModal();
    var say = function (text) { status.textContent = text || ""; status.hidden = !text; };
    return { root: d, tools: tools, body: body, say: say, note: note, footer: footer };
  }

  // -- the heatmap --------------------------------------------------------------------------
  function panelsOf(values, shape, mask) {
    var t = values;
    if (shape.length === 4) { t = t[0]; shape = shape.slice(1); }
    if (shape.length === 1) { t = [t]; shape = [1, shape[0]]; }
    var heads = shape.length === 3;
    var list = heads ? t : [t];
    var num = function (v) { return v === true ? 1 : v === false ? 0 : (typeof v === "number" && isFinite(v) ? v : 0); };
    return { heads: heads, panels: list.map(function (m) { return m.map(function (r) { return r.map(function (v) { var x = num(v); return mask ? (x !== 0 ? 1 : 0) : x; }); }); }) };
  }
  function rowNormalise(m) {
    return m.map(function (row) {
      var nz = row.filter(function (v) { return v !== 0; });
      if (!nz.length) return row.map(function () { return 0; });
      var lo = Math.min.apply(null, nz), hi = Math.max.apply(null, row);
      return row.map(function (v) { return v === 0 ? 0 : (hi - lo <= 1e-9 ? 0.5 : Math.min(1, Math.max(0, (v - lo) / (hi - lo)))); });
    });
  }
  function isCausal(m) {
    var n = m.length;
    if (n < 2 || m[0].length !== n) return false;
    var below = false;
    for (var i = 0; i < n; i++) for (var j = 0; j < n; j++) {
      if (j > i && m[i][j] !== 0) return false;
      if (j < i && m[i][j] > 0) below = true;
    }
    return below;
  }
  function panelPx(seq, share) {
    var cap = seq <= 6 ? 480 : seq <= 12 ? 600 : seq <= 20 ? 760 : 1200;
    return Math.max(280, Math.min(share, cap));
  }

  function heatmap(link) {
    var mask = link.dataset.mask === "1";
    var v = dialog(link.dataset.label + " · attention " + (mask ? "mask" : "weights"));
    v.say("Loading full tensor…");
    var select = el("select", { "aria-label": "Colormap" });
    Object.keys(STOPS).forEach(function (k) { var o = el("option", { value: k }, k); select.appendChild(o); });
    select.value = STOPS[link.dataset.colormap] ? link.dataset.colormap : "viridis";
    var lab = el("label", { class: "hint" }, "Colormap ");
    lab.appendChild(select);
    Promise.all([fetchPort(link, link.dataset.port, 4096),
                 labelsOf(link, link.dataset.rows), labelsOf(link, link.dataset.cols)]).then(function (got) {
      var answer = got[0], rows = got[1], cols = got[2] || got[1];
      if (!answer.ok) {
        v.say(gone(answer) ? "Cannot fetch: run is no longer available."
                           : "Couldn't load: " + (answer.body.detail || answer.status) + ". Re-run the graph, or shorten the sequence.");
        return;
      }
      if (answer.body.type !== "tensor") { v.say("Expected tensor, got " + answer.body.type); return; }
      var got2 = panelsOf(answer.body.values, answer.body.sliced_shape, mask);
      if (!got2.panels.length || !got2.panels[0].length) { v.say("no data"); return; }
      v.say("");
      v.tools.appendChild(lab);
      var nr = got2.panels[0].length, nc = got2.panels[0][0].length, seq = nc;
      v.note.textContent = "seq_len = " + seq + (mask ? "" : " · row-normalised colours");
      var rowName = function (i) { return rows && rows[i] !== undefined ? rows[i] : "q" + i; };
      var colName = function (j) { return cols && cols[j] !== undefined ? cols[j] : "k" + j; };
      var grid = el("div", { class: "viewer-heads" });
      v.body.appendChild(grid);
      var labelled = Math.max(nr, nc) <= LABELS;
      var panels = got2.panels.map(function (m, k) {
        var causal = mask ? isCausal(m.map(function (r) { return r.map(function (x) { return 1 - x; }); })) : isCausal(m);
        return { m: m, k: k, causal: causal, z: mask ? m : rowNormalise(m) };
      });
      function draw() {
        grid.textContent = "";
        var per = Math.min(2, panels.length);
        var share = Math.min((v.body.clientWidth - 24) / per - (labelled ? 90 : 10), v.body.clientHeight - 110);
        var px = panelPx(seq, share), cell = px / Math.max(nr, nc), left = labelled ? 80 : 4, top = got2.heads ? 22 : 4;
        var bottom = labelled ? 70 : 4, font = cell < 18 ? 10 : 12;
        panels.forEach(function (p) {
          var w = left + cell * nc + 8, h = top + cell * nr + bottom;
          var root = svg("svg", { width: w, height: h, viewBox: "0 0 " + w + " " + h, role: "img", "font-size": font,
                                  "aria-label": (got2.heads ? "h" + p.k + ": " : "") + "attention " + (mask ? "mask" : "weights") + " [" + nr + " × " + nc + "]" });
          var defs = svg("defs");
          var pat = svg("pattern", { id: "viewer-stripes-js", width: 6, height: 6, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" });
          pat.appendChild(svg("rect", { width: 3, height: 6, fill: "#ffffff", "fill-opacity": 0.35 }));
          defs.appendChild(pat); root.appendChild(defs);
          if (got2.heads) root.appendChild(svg("text", { x: left, y: 15, "font-weight": 600 }, "h" + p.k));
          for (var i = 0; i < nr; i++) for (var j = 0; j < nc; j++) {
            var striped = p.causal && j > i;
            var x = left + j * cell, y = top + i * cell;
            root.appendChild(tip(svg("rect", { x: x, y: y, width: cell + 0.3, height: cell + 0.3, fill: colour(select.value, striped ? 0 : p.z[i][j]) }),
              (got2.heads ? "head " + p.k + " · " : "") + "w[" + i + ", " + j + "] = " + p.m[i][j].toFixed(3) + "\n" + rowName(i) + " → " + colName(j)));
            if (striped) root.appendChild(svg("rect", { x: x, y: y, width: cell + 0.3, height: cell + 0.3, fill: "url(#viewer-stripes-js)", "pointer-events": "none" }));
          }
          if (labelled) {
            for (var r = 0; r < nr; r++) root.appendChild(svg("text", { x: left - 4, y: top + (r + 0.5) * cell + font * 0.35, "text-anchor": "end" }, rowName(r)));
            for (var c = 0; c < nc; c++) {
              var cx = left + (c + 0.5) * cell, cy = top + nr * cell + 6;
              root.appendChild(svg("text", { x: cx, y: cy, transform: "rotate(45 " + cx + " " + cy + ")" }, colName(c)));
            }
          }
          var div = el("div", { class: "viewer-head", "data-head": got2.heads ? "h" + p.k : "" });
          div.appendChild(root);
          grid.appendChild(div);
        });
      }
      draw();
      var onResize = function () { if (v.root.isConnected) draw(); else window.removeEventListener("resize", onResize); };
      window.addEventListener("resize", onResize);
      select.addEventListener("change", draw);
    }, function (err) { v.say("Couldn't load: " + err.message); });
  }

  // -- the scatter --------------------------------------------------------------------------
  function scatter(link) {
    var v = dialog(link.dataset.label + " · embedding scatter");
    v.say("Loading points…");
    Promise.all([fetchPort(link, link.dataset.port, 200000), labelsOf(link, link.dataset.rows)]).then(function (got) {
      var answer = got[0], given = got[1];
      if (!answer.ok) {
        v.say(gone(answer) ? "Cannot load: this run is no longer available." : "Couldn't load points: " + (answer.body.detail || answer.status));
        return;
      }
      if (answer.body.type !== "tensor") { v.say("Expected tensor, got " + answer.body.type); return; }
      var pts = (answer.body.values || []).filter(function (p) { return p && p.length === 2; })
        .map(function (p) { return [isFinite(p[0]) ? +p[0] : 0, isFinite(p[1]) ? +p[1] : 0]; });
      if (!pts.length) { v.say("No points to display"); return; }
      v.say("");
      var names = pts.map(function (_, i) { return given && given[i] !== undefined && given[i] !== "" ? given[i] : "#" + i; });
      var xs = pts.map(function (p) { return p[0]; }), ys = pts.map(function (p) { return p[1]; });
      var x0 = Math.min.apply(null, xs), x1 = Math.max.apply(null, xs), y0 = Math.min.apply(null, ys), y1 = Math.max.apply(null, ys);
      var st = { cx: (x0 + x1) / 2, cy: (y0 + y1) / 2, zoom: 100, hidden: new Set(), filter: "" };
      var W, H, fit;
      function measure() {
        W = Math.max(320, 0.9 * window.innerWidth - 312); H = Math.max(280, 0.88 * window.innerHeight - 132);
        fit = FIT * Math.min(W / ((x1 - x0) || 1), H / ((y1 - y0) || 1));
      }
      measure();

      var side = el("aside", { class: "viewer-sidebar", "aria-label": "Nearest to view centre" });
      side.appendChild(el("h3", {}, "Nearest to view centre"));
      var filter = el("input", { type: "search", placeholder: "Filter labels…", "aria-label": "Filter labels…" });
      side.appendChild(filter);
      var showAll = el("button", { type: "button", class: "show-all" }, "Show all");
      side.appendChild(showAll);
      var list = el("ul", { class: "viewer-nearest" });
      side.appendChild(list);
      var main = el("div", { class: "viewer-main" });
      var tools = el("div", { class: "viewer-tools" });
      var out = el("button", { type: "button", "aria-label": "Zoom out" }, "−");
      var pct = el("span", { class: "zoom" });
      var inn = el("button", { type: "button", "aria-label": "Zoom in" }, "+");
      var reset = el("button", { type: "button", "aria-label": "Reset view" }, "Reset");
      [out, pct, inn, reset].forEach(function (b) { tools.appendChild(b); });
      tools.appendChild(el("span", { class: "hint" }, "click a label to centre · drag to pan · scroll to zoom"));
      var plot = el("div", { class: "viewer-plot-area", "data-plot": "scatter" });
      main.appendChild(tools); main.appendChild(plot);
      v.body.appendChild(side); v.body.appendChild(main);
      var count = el("span", { class: "viewer-count" });
      v.note.appendChild(count);

      function px() { return fit * st.zoom / 100; }
      function nearest(text, n) {
        var needle = text.trim().toLowerCase();
        var idx = [];
        for (var i = 0; i < pts.length; i++) if (!needle || names[i].toLowerCase().indexOf(needle) >= 0) idx.push(i);
        var d = function (i) { var dx = pts[i][0] - st.cx, dy = pts[i][1] - st.cy; return dx * dx + dy * dy; };
        idx.sort(function (a, b) { return d(a) - d(b) || a - b; });
        return idx.slice(0, n);
      }
      function draw() {
        var s = px();
        var shown = [], named = nearest("", pts.length).filter(function (i) { return !st.hidden.has(i); }).slice(0, NEAREST);
        var namedSet = new Set(named);
        for (var i = 0; i < pts.length; i++) {
          if (st.hidden.has(i)) continue;
          var dx = (pts[i][0] - st.cx) * s, dy = (pts[i][1] - st.cy) * s;
          if (Math.abs(dx) > W / 2 + 28 || Math.abs(dy) > H / 2 + 28) continue;  // far outside: culled
          shown.push(i);
        }
        var label = function (i) { return given && !/^#\d+$/.test(names[i]) ? names[i] : "pt " + i; };
        var sx = function (x) { return W / 2 + (x - st.cx) * s; }, sy = function (y) { return H / 2 - (y - st.cy) * s; };
        var root = svg("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, class: "viewer-scatter", role: "img",
                                "aria-label": "Embedding scatter of " + pts.length + " points", "font-size": 11 });
        root.appendChild(svg("rect", { class: "plot-area", width: W, height: H }));
        if (x0 < 0 && x1 > 0) root.appendChild(svg("line", { class: "axis", x1: sx(0), y1: 0, x2: sx(0), y2: H }));
        if (y0 < 0 && y1 > 0) root.appendChild(svg("line", { class: "axis", x1: 0, y1: sy(0), x2: W, y2: sy(0) }));
        root.appendChild(svg("line", { class: "crosshair", x1: W / 2 - 8, y1: H / 2, x2: W / 2 + 8, y2: H / 2 }));
        root.appendChild(svg("line", { class: "crosshair", x1: W / 2, y1: H / 2 - 8, x2: W / 2, y2: H / 2 + 8 }));
        shown.forEach(function (i) {
          root.appendChild(tip(svg("circle", { cx: sx(pts[i][0]), cy: sy(pts[i][1]), r: 3.5, fill: PALETTE[i % PALETTE.length] }),
            label(i) + "\n(" + pts[i][0].toFixed(3) + ", " + pts[i][1].toFixed(3) + ")"));
        });
        named.forEach(function (i) {
          root.appendChild(svg("text", { class: "dot-label", x: sx(pts[i][0]) + 5, y: sy(pts[i][1]) - 4 }, names[i]));
        });
        plot.textContent = "";
        plot.appendChild(root);
        pct.textContent = Math.round(st.zoom) + "%";
        count.textContent = pts.length + " points · " + Math.round(st.zoom) + "% · " + st.hidden.size + " hidden";
        showAll.hidden = st.hidden.size === 0;
        rows();
      }
      function rows() {
        list.textContent = "";
        var idx = nearest(st.filter, NEAREST);
        if (!idx.length) { list.appendChild(el("li", { class: "hint" }, "No labels match")); return; }
        idx.forEach(function (i) {
          var hidden = st.hidden.has(i);
          var li = el("li", hidden ? { class: "dimmed" } : {});
          var name = el("button", { type: "button", class: "centre-on", "data-index": String(i), title: "Centre on " + names[i] }, names[i]);
          var eye = el("button", { type: "button", class: "eye", "aria-label": hidden ? "Show" : "Hide", "data-index": String(i) }, hidden ? "◌" : "◉");
          li.appendChild(name); li.appendChild(eye); list.appendChild(li);
        });
      }
      list.addEventListener("click", function (event) {
        var b = event.target.closest("button");
        if (!b) return;
        var i = +b.dataset.index;
        if (b.classList.contains("eye")) { if (st.hidden.has(i)) st.hidden.delete(i); else st.hidden.add(i); }
        else { st.cx = pts[i][0]; st.cy = pts[i][1]; }
        draw();
      });
      filter.addEventListener("input", function () { st.filter = filter.value; rows(); });
      showAll.addEventListener("click", function () { st.hidden.clear(); draw(); });
      var zoomTo = function (z) { st.zoom = Math.min(ZOOM_MAX, Math.max(ZOOM_MIN, z)); draw(); };
      out.addEventListener("click", function () { zoomTo(st.zoom / ZOOM_STEP); });
      inn.addEventListener("click", function () { zoomTo(st.zoom * ZOOM_STEP); });
      reset.addEventListener("click", function () { st.cx = (x0 + x1) / 2; st.cy = (y0 + y1) / 2; zoomTo(100); });
      plot.addEventListener("wheel", function (event) {  // zoom at the cursor
        event.preventDefault();
        var r = plot.getBoundingClientRect(), s = px();
        var mx = st.cx + (event.clientX - r.left - W / 2) / s, my = st.cy - (event.clientY - r.top - H / 2) / s;
        var z = Math.min(ZOOM_MAX, Math.max(ZOOM_MIN, st.zoom * Math.exp(-event.deltaY * 0.0015)));
        var s2 = fit * z / 100;
        st.cx = mx - (event.clientX - r.left - W / 2) / s2; st.cy = my + (event.clientY - r.top - H / 2) / s2; st.zoom = z;
        draw();
      }, { passive: false });
      var pan = null;
      plot.addEventListener("pointerdown", function (event) {
        if (event.button !== 0) return;
        pan = { x: event.clientX, y: event.clientY, cx: st.cx, cy: st.cy };
        plot.setPointerCapture(event.pointerId);
      });
      plot.addEventListener("pointermove", function (event) {
        if (!pan) return;
        var s = px();
        st.cx = pan.cx - (event.clientX - pan.x) / s; st.cy = pan.cy + (event.clientY - pan.y) / s;
        draw();
      });
      var endPan = function () { pan = null; };
      plot.addEventListener("pointerup", endPan); plot.addEventListener("pointercancel", endPan);
      var onResize = function () { if (v.root.isConnected) { measure(); draw(); } else window.removeEventListener("resize", onResize); };
      window.addEventListener("resize", onResize);
      draw();
    }, function (err) { v.say("Couldn't load points: " + err.message); });
  }

  window.CodefyViewers = { open: function (link) { return link.dataset.viewer === "scatter" ? scatter(link) : heatmap(link); } };
})();
