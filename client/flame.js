// profctl's flame graph behaviour, embedded in every SVG it writes
// (client/flame.c). Zoom on click, reset, tooltips and a regex search whose
// matched share counts nested matches once. Frames are <g class="fr"> with
// data-o (offset in the value axis), data-v (value) and data-d (depth); the
// first line of their <title> is the full name.
"use strict";

var cfg, frames = [], zoomed = null, total = 1;
var details, tip, tipText, tipBox, matched, resetButton, searchInput;

function num(el, name) {
        return Number(el.getAttribute(name));
}

function init() {
        var svg = document.documentElement;
        var all = document.querySelectorAll("g.fr");
        cfg = {
                pad: num(svg, "data-pad"),
                avail: num(svg, "data-avail"),
                minw: num(svg, "data-minw"),
                cw: num(svg, "data-cw")
        };
        total = num(svg, "data-total") || 1;
        for (var i = 0; i < all.length; i++) {
                var g = all[i], title = g.querySelector("title");
                var info = title ? title.textContent : "";
                frames.push({
                        g: g,
                        rect: g.querySelector("rect"),
                        text: g.querySelector("text"),
                        o: num(g, "data-o"),
                        v: num(g, "data-v"),
                        d: num(g, "data-d"),
                        name: info.split("\n")[0],
                        info: info,
                        fill: g.querySelector("rect").getAttribute("fill")
                });
                g.frameIndex = i;
        }
        details = document.getElementById("details");
        tip = document.getElementById("tip");
        tipText = document.getElementById("tiptext");
        tipBox = document.getElementById("tipbox");
        matched = document.getElementById("matched");
        resetButton = document.getElementById("reset");
        searchInput = document.getElementById("search");

        var layer = document.getElementById("frames");
        layer.addEventListener("click", function (e) {
                var f = frameOf(e.target);
                if (f)
                        zoom(f);
        });
        layer.addEventListener("mouseover", function (e) {
                var f = frameOf(e.target);
                if (f)
                        showTip(f, e);
        });
        layer.addEventListener("mousemove", function (e) {
                if (tip.style.display !== "none")
                        moveTip(e);
        });
        layer.addEventListener("mouseout", function (e) {
                if (!frameOf(e.relatedTarget))
                        hideTip();
        });
        resetButton.addEventListener("click", unzoom);
        if (searchInput) {
                searchInput.addEventListener("input", function () {
                        search(searchInput.value);
                });
        }
        document.addEventListener("keydown", function (e) {
                if ((e.ctrlKey || e.metaKey) && e.key === "f" && searchInput) {
                        e.preventDefault();
                        searchInput.focus();
                } else if (e.key === "Escape") {
                        if (searchInput && searchInput.value) {
                                searchInput.value = "";
                                search("");
                        } else {
                                unzoom();
                        }
                }
        });
}

function frameOf(el) {
        while (el && el.getAttribute) {
                if (el.frameIndex !== undefined)
                        return frames[el.frameIndex];
                el = el.parentNode;
        }
        return null;
}

// The label a frame of width w pixels has room for.
function label(name, w) {
        var n = Math.floor((w - 6) / cfg.cw);
        if (n < 3)
                return "";
        if (name.length <= n)
                return name;
        return name.substring(0, n - 2) + "..";
}

function place(f, x, w) {
        f.rect.setAttribute("x", x.toFixed(2));
        f.rect.setAttribute("width", w.toFixed(2));
        if (f.text) {
                f.text.setAttribute("x", (x + 3).toFixed(2));
                f.text.textContent = label(f.name, w);
        }
}

function show(f, visible) {
        f.g.style.display = visible ? "" : "none";
}

function zoom(z) {
        var scale = cfg.avail / z.v;
        zoomed = z;
        resetButton.style.display = "";
        for (var i = 0; i < frames.length; i++) {
                var f = frames[i];
                if (f.d < z.d && f.o <= z.o && f.o + f.v >= z.o + z.v) {
                        // an ancestor: spans the width, dimmed
                        place(f, cfg.pad, cfg.avail);
                        f.g.classList.add("parent");
                        show(f, true);
                } else if (f.d >= z.d && f.o >= z.o && f.o + f.v <= z.o + z.v) {
                        var w = f.v * scale;
                        f.g.classList.remove("parent");
                        show(f, w >= cfg.minw);
                        if (w >= cfg.minw)
                                place(f, cfg.pad + (f.o - z.o) * scale, w);
                } else {
                        show(f, false);
                }
        }
}

function unzoom() {
        var scale = cfg.avail / total;
        zoomed = null;
        resetButton.style.display = "none";
        for (var i = 0; i < frames.length; i++) {
                var f = frames[i];
                f.g.classList.remove("parent");
                place(f, cfg.pad + f.o * scale, f.v * scale);
                show(f, true);
        }
}

function showTip(f, e) {
        var lines = f.info.split("\n");
        details.textContent = lines.slice(0, 2).join(": ");
        while (tipText.firstChild)
                tipText.removeChild(tipText.firstChild);
        for (var i = 0; i < lines.length; i++) {
                var t = document.createElementNS("http://www.w3.org/2000/svg", "tspan");
                t.setAttribute("x", "6");
                t.setAttribute("dy", i === 0 ? "14" : "15");
                t.textContent = lines[i];
                tipText.appendChild(t);
        }
        tip.style.display = "";
        var b = tipText.getBBox();
        tipBox.setAttribute("width", (b.width + 12).toFixed(0));
        tipBox.setAttribute("height", (b.height + 8).toFixed(0));
        moveTip(e);
}

function moveTip(e) {
        var svg = document.documentElement;
        var m = svg.getScreenCTM();
        if (!m)
                return;
        var p = svg.createSVGPoint();
        p.x = e.clientX;
        p.y = e.clientY;
        p = p.matrixTransform(m.inverse());
        var w = Number(tipBox.getAttribute("width")), h = Number(tipBox.getAttribute("height"));
        var x = p.x + 14, y = p.y + 14;
        var W = num(svg, "width"), H = num(svg, "height");
        if (x + w > W)
                x = Math.max(0, p.x - w - 8);
        if (y + h > H)
                y = Math.max(0, p.y - h - 8);
        tip.setAttribute("transform", "translate(" + x.toFixed(0) + "," + y.toFixed(0) + ")");
}

function hideTip() {
        tip.style.display = "none";
        details.textContent = " ";
}

function percent(part) {
        return (100 * part / total).toFixed(2) + "%";
}

// Highlights the frames whose name matches the regular expression and says
// what share of the total they hold, a frame inside another match counted
// once: the union of their spans on the value axis.
function search(term) {
        var re = null, spans = [];
        if (term) {
                try {
                        re = new RegExp(term);
                } catch (err) {
                        matched.textContent = "invalid regular expression";
                        return;
                }
        }
        for (var i = 0; i < frames.length; i++) {
                var f = frames[i], hit = re !== null && re.test(f.name);
                f.rect.setAttribute("fill", hit ? "rgb(230,0,230)" : f.fill);
                if (hit)
                        spans.push([f.o, f.o + f.v]);
        }
        if (re === null) {
                matched.textContent = "";
                return;
        }
        spans.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });
        var sum = 0, end = -1;
        for (var j = 0; j < spans.length; j++) {
                var s = spans[j];
                if (s[0] >= end) {
                        sum += s[1] - s[0];
                        end = s[1];
                } else if (s[1] > end) {
                        sum += s[1] - end;
                        end = s[1];
                }
        }
        matched.textContent = "Matched: " + percent(sum) + " (" + spans.length + " frames)";
}

window.addEventListener("load", init);
