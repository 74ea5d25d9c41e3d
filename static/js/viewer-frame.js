/* The full-size viewer inside the editor's dialog: an <iframe> of the viewer's frame page
   (apps/editor/views/viewers.viewer_frame), whose JSON (#viewer-data) apps/inspector/viewers
   builds by the viewers' rules (heatmap_data, scatter_data); this file draws it with plotly,
   loaded just before it on that page only. A key pressed in here never reaches the editor, so
   Esc asks the editor (same origin) to close the dialog. */
(function () {
  "use strict";
  var CLOSE = "codefy-viewer:close";
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && window.parent !== window) {
      event.preventDefault();
      window.parent.postMessage({ type: CLOSE }, window.location.origin);
    }
  });
  var data = JSON.parse(document.getElementById("viewer-data").textContent);
  if (data.status || !window.Plotly) return;
  var CONFIG = { displayModeBar: false, doubleClick: false, showTips: false };
  var FONT = { family: "ui-sans-serif, system-ui, sans-serif", color: "#334155" };
  function later(fn) { var t = null; return function () { clearTimeout(t); t = setTimeout(fn, 120); }; }
  function q(selector) { return document.querySelector(selector); }

  // -- the heatmap: one plot per head -------------------------------------------------------
  function heatmap() {
    var host = q("[data-plot=heatmap]"), select = q("[data-colormap]");
    var nr = data.rows.length, nc = data.cols.length, n = Math.max(nr, nc);
    var left = data.labelled ? 80 : 8, bottom = data.labelled ? 70 : 8, top = data.heads ? 24 : 8, right = 8;
    var plots = data.panels.map(function (p) {
      var div = document.createElement("div");
      div.className = "viewer-head";
      div.setAttribute("role", "img");
      div.setAttribute("aria-label", (p.title ? p.title + ": " : "") + "attention " + data.what + " [" + nr + " × " + nc + "]");
      host.appendChild(div);
      return div;
    });
    function panelPx() {  // max(280, min(the viewport's share, a cap by sequence length))
      var per = Math.min(2, data.panels.length);
      var share = Math.min((host.clientWidth - 16) / per - left - right - 12,
                           window.innerHeight - host.getBoundingClientRect().top - 48 - top - bottom);
      var cap = data.seq_len <= 6 ? 480 : data.seq_len <= 12 ? 600 : data.seq_len <= 20 ? 760 : 1200;
      return Math.max(280, Math.min(share, cap));
    }
    function stripes() {  // a causal pattern's blocked cells, hatched
      var d = "";
      for (var i = 0; i < nr; i++) for (var j = i + 1; j < nc; j++) {
        d += "M" + (j - 0.5) + "," + (i + 0.5) + "L" + (j + 0.5) + "," + (i - 0.5) +
             "M" + (j - 0.5) + "," + i + "L" + j + "," + (i - 0.5) + "M" + j + "," + (i + 0.5) + "L" + (j + 0.5) + "," + i;
      }
      return [{ type: "path", path: d, xref: "x", yref: "y", line: { color: data.stripes, width: 1 } }];
    }
    function axis(names, range, angle) {
      return { range: range, fixedrange: true, showgrid: false, zeroline: false, ticks: "", tickangle: angle,
               showticklabels: data.labelled, tickvals: names.map(function (_, i) { return i; }), ticktext: names };
    }
    function draw() {
      var cell = panelPx() / n;
      data.panels.forEach(function (p, k) {
        Plotly.react(plots[k], [{
          type: "heatmap", z: p.z, text: p.tips, hovertemplate: "%{text}<extra></extra>", zmin: 0, zmax: 1,
          colorscale: data.colormaps[select.value], showscale: false
        }], {
          width: left + cell * nc + right, height: top + cell * nr + bottom,
          margin: { l: left, r: right, t: top, b: bottom, pad: 2 }, font: Object.assign({ size: cell < 18 ? 10 : 12 }, FONT),
          xaxis: axis(data.cols, [-0.5, nc - 0.5], 45), yaxis: axis(data.rows, [nr - 0.5, -0.5], 0),
          shapes: p.causal ? stripes() : [],
          annotations: p.title ? [{ text: "<b>" + p.title + "</b>", xref: "paper", yref: "paper", x: 0, y: 1, xanchor: "left",
                                    yanchor: "bottom", showarrow: false }] : []
        }, CONFIG);
      });
    }
    select.addEventListener("change", draw);
    window.addEventListener("resize", later(draw));
    draw();
  }

  // -- the scatter: plotly's pan (drag) and zoom (wheel), and our own list and buttons --------
  function scatter() {
    var plot = q("[data-plot=scatter]"), list = q("[data-nearest]"), filter = q("[data-filter]");
    var showAll = q("[data-show-all]"), zoomText = q("[data-zoom-text]"), footer = q("[data-footer]");
    var xs = data.x, ys = data.y, count = xs.length;
    var x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    for (var i = 0; i < count; i++) {
      x0 = Math.min(x0, xs[i]); x1 = Math.max(x1, xs[i]); y0 = Math.min(y0, ys[i]); y1 = Math.max(y1, ys[i]);
    }
    var home = { cx: (x0 + x1) / 2, cy: (y0 + y1) / 2 };
    var st = { cx: home.cx, cy: home.cy, zoom: 100, hidden: new Set(), filter: "" };
    var W, H, fit;
    function measure() {
      W = Math.max(320, plot.clientWidth); H = Math.max(280, plot.clientHeight);
      fit = data.fit_share * Math.min(W / ((x1 - x0) || 1), H / ((y1 - y0) || 1));  // px per unit at 100 %
    }
    function clampZoom(z) { return isFinite(z) ? Math.min(data.zoom_max, Math.max(data.zoom_min, z)) : 100; }
    function nearest(text, n) {  // the n points nearest the view's centre whose name contains text
      var needle = text.trim().toLowerCase(), idx = [];
      for (var i = 0; i < count; i++) if (!needle || data.names[i].toLowerCase().indexOf(needle) >= 0) idx.push(i);
      var d = function (i) { var dx = xs[i] - st.cx, dy = ys[i] - st.cy; return dx * dx + dy * dy; };
      idx.sort(function (a, b) { return d(a) - d(b) || a - b; });
      return idx.slice(0, n);
    }
    function traces() {
      var shown = { x: [], y: [], text: [], color: [] };
      for (var i = 0; i < count; i++) {
        if (st.hidden.has(i)) continue;
        shown.x.push(xs[i]); shown.y.push(ys[i]); shown.text.push(data.tips[i]); shown.color.push(data.palette[i % data.palette.length]);
      }
      var named = nearest("", count).filter(function (i) { return !st.hidden.has(i); }).slice(0, data.nearest);
      return [
        { type: "scatter", mode: "markers", x: shown.x, y: shown.y, text: shown.text, marker: { size: 7, color: shown.color },
          hovertemplate: "%{text}<br>(%{x:.3f}, %{y:.3f})<extra></extra>" },
        { type: "scatter", mode: "text", hoverinfo: "skip", textposition: "top right",
          x: named.map(function (i) { return xs[i]; }), y: named.map(function (i) { return ys[i]; }),
          text: named.map(function (i) { return data.names[i]; }), textfont: { size: 11, color: "rgba(51,65,85,0.65)" } }
      ];
    }
    function cross(axis) {  // the centre crosshair, 8 px each way
      var line = { type: "line", xref: "paper", yref: "paper", line: { color: "#94a3b8", width: 1 } };
      if (axis === "x") return Object.assign(line, { xsizemode: "pixel", xanchor: 0.5, x0: -8, x1: 8, y0: 0.5, y1: 0.5 });
      return Object.assign(line, { ysizemode: "pixel", yanchor: 0.5, y0: -8, y1: 8, x0: 0.5, x1: 0.5 });
    }
    function draw() {
      var s = fit * st.zoom / 100;
      var axis = function (c, half, crosses) {
        return { range: [c - half / s, c + half / s], showgrid: false, zeroline: crosses, zerolinecolor: "#cbd5e1",
                 showticklabels: false, ticks: "", showline: false };
      };
      Plotly.react(plot, traces(), {
        width: W, height: H, margin: { l: 0, r: 0, t: 0, b: 0 }, dragmode: "pan", hovermode: "closest", showlegend: false,
        font: Object.assign({ size: 11 }, FONT), xaxis: axis(st.cx, W / 2, x0 < 0 && x1 > 0),
        yaxis: axis(st.cy, H / 2, y0 < 0 && y1 > 0), shapes: [cross("x"), cross("y")]
      }, Object.assign({ scrollZoom: true }, CONFIG));
      zoomText.textContent = Math.round(st.zoom) + "%";
      footer.textContent = count + " points · " + Math.round(st.zoom) + "% · " + st.hidden.size + " hidden";
      showAll.hidden = st.hidden.size === 0;
      rows();
    }
    function rows() {
      list.textContent = "";
      var idx = nearest(st.filter, data.nearest);
      if (!idx.length) {
        var none = document.createElement("li");
        none.className = "hint";
        none.textContent = data.no_match;
        list.appendChild(none);
        return;
      }
      idx.forEach(function (i) {
        var hidden = st.hidden.has(i), li = document.createElement("li");
        if (hidden) li.className = "dimmed";
        var name = document.createElement("button");
        name.type = "button"; name.className = "centre-on"; name.dataset.index = i; name.title = "Centre on " + data.names[i];
        name.textContent = data.names[i];
        var eye = document.createElement("button");
        eye.type = "button"; eye.className = "eye"; eye.dataset.index = i;
        eye.setAttribute("aria-label", hidden ? "Show" : "Hide"); eye.textContent = hidden ? "◌" : "◉";
        li.appendChild(name); li.appendChild(eye); list.appendChild(li);
      });
    }
    measure();
    draw();
    // a pan or a wheel zoom in plotly: the view's centre and zoom follow, the zoom kept in bounds
    plot.on("plotly_relayout", function () {
      var xr = plot.layout.xaxis.range, yr = plot.layout.yaxis.range;
      st.cx = (xr[0] + xr[1]) / 2; st.cy = (yr[0] + yr[1]) / 2;
      st.zoom = clampZoom(W / (xr[1] - xr[0]) / fit * 100);
      draw();
    });
    list.addEventListener("click", function (event) {
      var b = event.target.closest("button");
      if (!b) return;
      var i = +b.dataset.index;
      if (b.classList.contains("eye")) { if (st.hidden.has(i)) st.hidden.delete(i); else st.hidden.add(i); }
      else { st.cx = xs[i]; st.cy = ys[i]; }
      draw();
    });
    filter.addEventListener("input", function () { st.filter = filter.value; rows(); });
    showAll.addEventListener("click", function () { st.hidden.clear(); draw(); });
    document.querySelectorAll("[data-zoom]").forEach(function (b) {
      b.addEventListener("click", function () {
        var how = b.dataset.zoom;
        if (how === "reset") { st.cx = home.cx; st.cy = home.cy; st.zoom = 100; }
        else st.zoom = clampZoom(how === "in" ? st.zoom * data.zoom_step : st.zoom / data.zoom_step);
        draw();
      });
    });
    window.addEventListener("resize", later(function () { measure(); draw(); }));
  }

  if (data.kind === "heatmap") heatmap(); else scatter();
})();
