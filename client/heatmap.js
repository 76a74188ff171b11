// The heatmap page's behaviour (profctl heatmap --format html): drag over
// the cells to select a time range (FlameScope's way: from the cell pressed
// to the cell released, in time order, whole cells), and the range's flame
// graph and folded stacks appear below. A range can be given in the page's
// address too, #range=FROM-TO in milliseconds after the first column's
// second, which is how a test selects one without a mouse.
//
// The data (a JSON block in the page): bucket_ms, unit, stacks (folded
// lines' frames, "a;b;c"), rows (the stack index of each of profd's stack
// lines, which may read the same), one (a sample's weight) and samples
// ([t_us, row, weight, span_us]: t_us in microseconds after the first
// column's second; a span (blocked time, span_us > 0) counts in a range by
// the part of it the range holds).
//
// Weights are fixed point (one 2^20) where a capture raised the rate
// (issue 44): a raised sample is worth base / raised rate of one. A range
// sums them per row and rounds as profd's query does (common/rate-weight.c,
// client/heatmap-weight.c, which this mirrors): each row its whole part,
// the samples left, the total rounded less those, one each to the rows of
// the largest fractions, the earlier row on a tie; so a range's folded
// stacks are exactly profctl query --from --to's.
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('heatmap-data').textContent);
  var grid = document.getElementById('grid');
  var cells = grid ? grid.querySelectorAll('rect[data-t]') : [];
  var status = document.getElementById('selection');
  var folded = document.getElementById('folded');
  var flame = document.getElementById('flame');
  var pressed = null;

  function cellTime(el) {
    return Number(el.getAttribute('data-t'));
  }

  function range(a, b) {
    var lo = Math.min(a, b), hi = Math.max(a, b) + data.bucket_ms;
    return [lo, hi];
  }

  function mark(r) {
    for (var i = 0; i < cells.length; i++) {
      var t = cellTime(cells[i]);
      cells[i].setAttribute('stroke', r && t >= r[0] && t < r[1] ? '#0000ff' : 'none');
    }
  }

  // The whole samples of each row from its weights' sum (see the top).
  function apportion(sums) {
    var one = data.one || 1, keys = Object.keys(sums).map(Number), whole = {};
    var total = 0, given = 0;
    keys.forEach(function (k) {
      whole[k] = Math.floor(sums[k] / one);
      given += whole[k];
      total += sums[k];
    });
    var left = Math.floor((total + one / 2) / one) - given;
    if (left > 0) {
      keys.sort(function (a, b) {
        var fa = sums[a] - whole[a] * one, fb = sums[b] - whole[b] * one;
        return fa !== fb ? fb - fa : a - b;
      });
      for (var i = 0; i < left && i < keys.length; i++)
        whole[keys[i]]++;
    }
    return whole;
  }

  // The folded stacks of the samples with t in [r[0], r[1]), sorted.
  function foldedOf(r) {
    var rows = {}, sums = {};
    var lo = r[0] * 1000, hi = r[1] * 1000;
    data.samples.forEach(function (s) {
      var w = 0;
      if (s[3] > 0) {
        var part = Math.min(s[0] + s[3], hi) - Math.max(s[0], lo);
        if (part > 0)
          w = Math.round(s[2] * part / s[3]);
      } else if (s[0] >= lo && s[0] < hi) {
        w = s[2];
      }
      if (w)
        rows[s[1]] = (rows[s[1]] || 0) + w;
    });
    var whole = apportion(rows);
    Object.keys(whole).forEach(function (k) {
      if (whole[k])
        sums[data.rows[k]] = (sums[data.rows[k]] || 0) + whole[k];
    });
    return Object.keys(sums).map(function (k) {
      return [data.stacks[k], sums[k]];
    }).sort(function (a, b) {
      return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0;
    });
  }

  function hue(name) {
    var h = 0;
    for (var i = 0; i < name.length; i++)
      h = (h * 31 + name.charCodeAt(i)) >>> 0;
    return 'hsl(' + (h % 30 + 350) % 360 + ',80%,' + (55 + h % 20) + '%)';
  }

  // A flame graph of the lines: the root "all" at the bottom, children in
  // name order, each frame as wide as its share.
  function draw(lines) {
    var root = {name: 'all', value: 0, children: {}};
    var depth = 0, rowHeight = 17, width = flame.clientWidth || 1000;
    lines.forEach(function (l) {
      var node = root, frames = l[0] === '' ? [] : l[0].split(';');
      root.value += l[1];
      frames.forEach(function (f) {
        node = node.children[f] || (node.children[f] = {name: f, value: 0, children: {}});
        node.value += l[1];
      });
      depth = Math.max(depth, frames.length);
    });
    flame.textContent = '';
    flame.style.height = ((depth + 1) * rowHeight) + 'px';
    if (!root.value)
      return;
    (function place(node, x, d) {
      var w = node.value / root.value * width;
      if (w >= 0.5) {
        var div = document.createElement('div');
        div.className = 'frame';
        div.style.left = x + 'px';
        div.style.width = Math.max(w - 1, 0.5) + 'px';
        div.style.top = ((depth - d) * rowHeight) + 'px';
        div.style.background = d ? hue(node.name) : '#cccccc';
        div.title = node.name + ' (' + node.value + ', ' + (100 * node.value / root.value).toFixed(2) + '%)';
        if (w > 30)
          div.textContent = node.name;
        flame.appendChild(div);
      }
      Object.keys(node.children).sort().forEach(function (k) {
        place(node.children[k], x, d + 1);
        x += node.children[k].value / root.value * width;
      });
    })(root, 0, 0);
  }

  function select(r) {
    var lines = foldedOf(r), total = 0;
    mark(r);
    lines.forEach(function (l) { total += l[1]; });
    status.textContent = 'selected ' + r[0] + ' to ' + r[1] + ' ms after the first column: ' +
      total + ' ' + data.unit + ' in ' + lines.length + ' stacks';
    folded.textContent = lines.map(function (l) { return l[0] + ' ' + l[1]; }).join('\n');
    draw(lines);
    document.body.setAttribute('data-selected', r[0] + '-' + r[1]);
  }

  // The time (ms after the first column) of the cell under the pointer,
  // empty cells included: from the grid's geometry, whatever the zoom.
  var frame = document.getElementById('grid-frame');
  function timeAt(e) {
    var box = frame.getBoundingClientRect();
    var columns = Number(grid.getAttribute('data-columns')), rows = Number(grid.getAttribute('data-rows'));
    var col = Math.floor((e.clientX - box.left) / box.width * columns);
    var row = Math.floor((e.clientY - box.top) / box.height * rows);
    col = Math.min(Math.max(col, 0), columns - 1);
    row = Math.min(Math.max(row, 0), rows - 1);
    return col * 1000 + row * data.bucket_ms;
  }
  if (grid && frame) {
    grid.addEventListener('mousedown', function (e) {
      pressed = timeAt(e);
      mark(range(pressed, pressed));
      e.preventDefault();
    });
    grid.addEventListener('mousemove', function (e) {
      if (pressed !== null)
        mark(range(pressed, timeAt(e)));
    });
    grid.addEventListener('mouseup', function (e) {
      if (pressed !== null)
        select(range(pressed, timeAt(e)));
      pressed = null;
    });
  }
  document.addEventListener('mouseup', function () { pressed = null; });

  var m = /#range=(\d+)-(\d+)/.exec(location.hash);
  if (m && Number(m[2]) > Number(m[1]))
    select([Number(m[1]), Number(m[2])]);
})();
