/// The style and script every report page carries inline (written for Tether; no library).
///
/// The script reads the page's `timeline-data` JSON, draws the lanes on one canvas and redraws on
/// every zoom or pan. A lane costs what its visible part costs: when a lane has more events in
/// view than a third of the canvas's pixel columns, each column shows how many events fall in it
/// (two binary searches per column, whatever the number of events), otherwise each event is
/// drawn as a tick. So a set of 10^6 events redraws in milliseconds at any zoom.
enum TimelineAssets {
    static let css = #"""
        body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 16px 48px;color:#222;background:#fafafa}
        h1{font-size:20px;margin:12px 0 2px}h2{font-size:16px;margin:18px 0 6px}
        .pass{color:#17702a}.fail{color:#b3141b}
        #verdict{font-weight:bold;margin:4px 0}.title{color:#666;margin:0}
        header a{font-size:13px}
        table#sets{border-collapse:collapse;background:#fff}
        table#sets td,table#sets th{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}
        td.num{text-align:right;font-variant-numeric:tabular-nums}td.verdict{font-weight:bold}
        .error{color:#b3141b;font-size:12px;white-space:pre-wrap}
        #toolbar{display:flex;gap:6px;align-items:center;margin-bottom:4px}
        #toolbar button{min-width:32px}#view-range{font-variant-numeric:tabular-nums;color:#333}
        .hint{color:#888;font-size:12px;margin-left:auto}
        #timeline{display:flex;border:1px solid #ccc;background:#fff;user-select:none}
        #lane-labels{flex:0 0 220px;border-right:1px solid #ddd;font-size:12px}
        .lane-label{box-sizing:border-box;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;padding:0 6px;border-top:1px solid #f0f0f0}
        .lane-label .count{color:#888;margin-left:4px}
        .lane-label.kind-interface{background:#eef6fb}.lane-label.kind-faults{background:#fdf0e6}.lane-label.kind-baseline{background:#f3eefa}
        #canvas-box{flex:1 1 auto;position:relative;min-width:0}
        #timeline-canvas{display:block;width:100%;cursor:crosshair}
        #tooltip{position:fixed;pointer-events:none;background:#222;color:#fff;font:12px/1.3 ui-monospace,monospace;padding:4px 6px;
          border-radius:3px;max-width:640px;white-space:pre-wrap;z-index:10}
        #details{background:#fff;border:1px solid #ddd;padding:6px;font:12px/1.35 ui-monospace,monospace;white-space:pre-wrap;max-height:220px;overflow:auto}
        ol#expectations{padding-left:24px}
        li.expectation{cursor:pointer;padding:2px 4px;border-radius:3px}
        li.expectation:hover{background:#eef}li.expectation.selected{background:#ffe9a8}
        li.expectation .verdict{font-weight:bold;margin-right:6px}
        li.expectation .evidence-count{color:#777;font-size:12px;margin-left:6px}
        .baseline pre{background:#fff;border:1px solid #ddd;padding:6px;font-size:12px;overflow:auto;max-height:260px}
        .plot{background:#fff;border:1px solid #ddd;margin-bottom:8px}
        .plot h3{font-size:13px;margin:4px 8px}.plot canvas{display:block;width:100%;height:160px}
        .legend span{display:inline-block;margin:0 8px 4px;font-size:12px}
        .legend i{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle}
        """#

    static let script = #"""
        (function () {
        'use strict';
        const started = performance.now();
        const data = JSON.parse(document.getElementById('timeline-data').textContent);
        const rowH = 22, axisH = 24;
        function undelta(a) { const r = new Float64Array(a.length); let s = 0; for (let i = 0; i < a.length; i++) { s += a[i]; r[i] = s; } return r; }
        function lowerBound(arr, x) { let lo = 0, hi = arr.length; while (lo < hi) { const m = (lo + hi) >> 1; if (arr[m] < x) lo = m + 1; else hi = m; } return lo; }
        const palette = ['#1f77b4', '#2a9d8f', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf', '#6a51a3', '#4e79a7', '#59a14f'];
        function hash(s) { let h = 0; for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0; return Math.abs(h); }
        function colorOf(lane, kind) {
          if (/diverged|violation|rejected|malformed|error|failed|missing|fault|backwards|^gap$/.test(kind)) return '#d62728';
          if (/timeout/.test(kind)) return '#ff7f0e';
          if (lane.kind === 'baseline') return kind === 'extra' ? '#9467bd' : '#8c564b';
          if (/^api_/.test(kind)) return '#1f77b4';
          if (/matched/.test(kind)) return '#2ca02c';
          if (lane.kind === 'interface') return kind === 'sent' ? '#17becf' : kind === 'received' ? '#6a51a3' : '#7f7f7f';
          return palette[hash(kind) % palette.length];
        }
        const lanes = data.lanes.map(function (l) {
          const lane = { name: l.name, kind: l.kind, core: l.core, category: l.category, kinds: l.kinds, kindCounts: l.kindCounts,
            strides: l.strides, t: undelta(l.t), p: undelta(l.p), k: Int32Array.from(l.k), det: new Map() };
          let item = 0;
          for (let i = 0; i < l.di.length; i++) { item += l.di[i]; lane.det.set(item, data.strings[l.ds[i]]); }
          lane.count = lane.t.length;
          lane.colors = lane.kinds.map(function (k) { return colorOf(lane, k); });
          let most = 0;
          for (let i = 1; i < lane.kindCounts.length; i++) if (lane.kindCounts[i] > lane.kindCounts[most]) most = i;
          lane.mainColor = lane.colors.length ? lane.colors[most] : '#999';
          return lane;
        });
        const endUs = Math.max(1000, data.endUs);
        const full = { t0: -endUs * 0.01, t1: endUs * 1.01 };
        let view = { t0: full.t0, t1: full.t1 };
        let highlight = [], selected = null;
        const timeline = document.getElementById('timeline');
        const canvas = document.getElementById('timeline-canvas');
        const ctx = canvas.getContext('2d');
        const labels = document.getElementById('lane-labels');
        const tooltip = document.getElementById('tooltip');
        const details = document.getElementById('details');

        function fmtTime(us, span) {
          const s = us / 1e6;
          const decimals = Math.max(0, Math.min(6, Math.ceil(-Math.log10(Math.max(span, 1) / 1e6 / 20))));
          return s.toFixed(decimals) + ' s';
        }
        function fmtExact(us) { return (us / 1e6).toFixed(6) + ' s'; }

        // Lane labels
        const spacer = document.createElement('div'); spacer.style.height = axisH + 'px'; labels.appendChild(spacer);
        lanes.forEach(function (lane, i) {
          const div = document.createElement('div');
          div.className = 'lane-label kind-' + lane.kind;
          div.style.height = rowH + 'px'; div.style.lineHeight = rowH + 'px';
          div.dataset.lane = i; div.dataset.name = lane.name; div.dataset.kind = lane.kind; div.dataset.count = lane.count;
          if (lane.core) div.dataset.core = lane.core;
          if (lane.category) div.dataset.category = lane.category;
          div.dataset.kinds = JSON.stringify(Object.fromEntries(lane.kinds.map(function (k, j) { return [k, lane.kindCounts[j]]; })));
          div.title = lane.name + ': ' + lane.kinds.map(function (k, j) { return k + ' ' + lane.kindCounts[j]; }).join(', ');
          const name = document.createElement('span'); name.className = 'name'; name.textContent = lane.name;
          const count = document.createElement('span'); count.className = 'count'; count.textContent = lane.count;
          div.appendChild(name); div.appendChild(count);
          labels.appendChild(div);
        });
        timeline.dataset.lanes = lanes.length;

        let cssW = 800;
        function resize() {
          const ratio = window.devicePixelRatio || 1;
          cssW = Math.max(200, canvas.parentElement.clientWidth);
          const cssH = axisH + lanes.length * rowH;
          canvas.style.height = cssH + 'px';
          canvas.width = Math.round(cssW * ratio); canvas.height = Math.round(cssH * ratio);
          ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
          draw();
        }

        function niceStep(raw) {
          const p = Math.pow(10, Math.floor(Math.log10(raw)));
          for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
          return 10 * p;
        }

        function draw() {
          const W = cssW, span = view.t1 - view.t0, sx = W / span;
          ctx.clearRect(0, 0, W, axisH + lanes.length * rowH);
          ctx.font = '11px system-ui, sans-serif'; ctx.textBaseline = 'middle';
          const step = niceStep(span / Math.max(1, W / 110));
          ctx.strokeStyle = '#eee'; ctx.fillStyle = '#555';
          for (let t = Math.ceil(view.t0 / step) * step; t <= view.t1; t += step) {
            const x = Math.round((t - view.t0) * sx) + 0.5;
            ctx.beginPath(); ctx.moveTo(x, axisH - 6); ctx.lineTo(x, axisH + lanes.length * rowH); ctx.stroke();
            ctx.fillText(fmtTime(t, span), x + 3, axisH / 2);
          }
          lanes.forEach(function (lane, i) {
            const y = axisH + i * rowH;
            if (i % 2) { ctx.fillStyle = 'rgba(0,0,0,0.025)'; ctx.fillRect(0, y, W, rowH); }
            const lo = lowerBound(lane.t, view.t0), hi = lowerBound(lane.t, view.t1 + 1e-6);
            if (hi - lo <= W / 3) {
              for (let j = lo; j < hi; j++) {
                const x = (lane.t[j] - view.t0) * sx;
                ctx.fillStyle = lane.colors[lane.k[j]];
                ctx.fillRect(Math.round(x) - 1, y + 4, 3, rowH - 8);
              }
            } else {
              // Aggregated: one bar per pixel column, its height the log of its count.
              const counts = new Int32Array(Math.ceil(W));
              let max = 1, a = lo;
              for (let px = 0; px < counts.length; px++) {
                const b = lowerBound(lane.t, view.t0 + (px + 1) / sx);
                counts[px] = b - a; if (b - a > max) max = b - a; a = b;
              }
              ctx.fillStyle = lane.mainColor;
              const lm = Math.log(max + 1);
              for (let px = 0; px < counts.length; px++) {
                if (!counts[px]) continue;
                const h = Math.max(2, (rowH - 6) * Math.log(counts[px] + 1) / lm);
                ctx.fillRect(px, y + rowH - 3 - h, 1, h);
              }
            }
            ctx.strokeStyle = '#f0f0f0'; ctx.beginPath(); ctx.moveTo(0, y + 0.5); ctx.lineTo(W, y + 0.5); ctx.stroke();
          });
          let visible = 0;
          function ring(h, color, width) {
            const lane = lanes[h.lane], t = lane.t[h.item];
            if (t < view.t0 || t > view.t1) return false;
            const x = (t - view.t0) * sx, y = axisH + h.lane * rowH;
            ctx.strokeStyle = color; ctx.lineWidth = width;
            ctx.strokeRect(Math.round(x) - 4, y + 1, 8, rowH - 2);
            ctx.setLineDash([3, 3]); ctx.beginPath(); ctx.moveTo(Math.round(x) + 0.5, axisH); ctx.lineTo(Math.round(x) + 0.5, axisH + lanes.length * rowH); ctx.stroke();
            ctx.setLineDash([]); ctx.lineWidth = 1;
            return true;
          }
          highlight.forEach(function (h) { if (ring(h, '#e6a100', 2)) visible++; });
          if (selected) ring(selected, '#000', 2);
          timeline.dataset.highlighted = highlight.length;
          timeline.dataset.highlightedVisible = visible;
          timeline.dataset.viewStartUs = Math.round(view.t0); timeline.dataset.viewEndUs = Math.round(view.t1);
          document.getElementById('view-range').textContent = fmtTime(Math.max(0, view.t0), span) + ' – ' + fmtTime(view.t1, span) + '  (' + fmtTime(span, span) + ' shown)';
          drawPlots();
        }

        function setView(t0, t1) {
          const minSpan = 1; // 1 µs
          if (t1 - t0 < minSpan) { const c = (t0 + t1) / 2; t0 = c - minSpan / 2; t1 = c + minSpan / 2; }
          const maxSpan = full.t1 - full.t0;
          if (t1 - t0 > maxSpan) { t0 = full.t0; t1 = full.t1; }
          if (t0 < full.t0) { t1 += full.t0 - t0; t0 = full.t0; }
          if (t1 > full.t1) { t0 -= t1 - full.t1; t1 = full.t1; }
          view = { t0: t0, t1: t1 };
          draw();
        }
        function zoom(factor, atX) {
          const span = view.t1 - view.t0, at = view.t0 + (atX === undefined ? cssW / 2 : atX) / cssW * span;
          setView(at - (at - view.t0) * factor, at + (view.t1 - at) * factor);
        }

        function hit(x, y) {
          const row = Math.floor((y - axisH) / rowH);
          if (row < 0 || row >= lanes.length) return null;
          const lane = lanes[row], sx = cssW / (view.t1 - view.t0), tm = view.t0 + x / sx;
          let j = lowerBound(lane.t, tm - 5 / sx), best = null, bestD = Infinity;
          for (; j < lane.count && lane.t[j] <= tm + 5 / sx; j++) {
            const d = Math.abs(lane.t[j] - tm);
            if (d < bestD) { bestD = d; best = j; }
          }
          if (best === null) return null;
          const inPixel = lowerBound(lane.t, tm + 0.5 / sx) - lowerBound(lane.t, tm - 0.5 / sx);
          return { lane: row, item: best, inPixel: inPixel };
        }
        function describe(h) {
          const lane = lanes[h.lane], kind = lane.kinds[lane.k[h.item]], p = lane.p[h.item];
          let text = kind + ' at ' + fmtExact(lane.t[h.item]) + '  [' + lane.name + ']';
          if (lane.kind === 'interface') text += '  frame #' + p; else if (p >= 0) text += '  trace event #' + (p + 1);
          const d = lane.det.get(h.item);
          if (d !== undefined) text += '\n' + d;
          else text += '\n(details kept for 1 in ' + lane.strides[lane.k[h.item]] + ' ' + kind + ' events of this lane; the --trace file has every one)';
          if (h.inPixel > 1) text += '\n' + h.inPixel + ' events in this pixel: zoom in to tell them apart';
          return text;
        }

        let drag = null;
        canvas.addEventListener('mousedown', function (e) { drag = { x: e.clientX, t0: view.t0, t1: view.t1, moved: false }; });
        window.addEventListener('mouseup', function (e) {
          if (drag && !drag.moved) {
            const r = canvas.getBoundingClientRect(), h = hit(e.clientX - r.left, e.clientY - r.top);
            if (h) { selected = h; details.textContent = describe(h); draw(); }
          }
          drag = null;
        });
        window.addEventListener('mousemove', function (e) {
          const r = canvas.getBoundingClientRect();
          if (drag) {
            const dx = e.clientX - drag.x;
            if (Math.abs(dx) > 2) drag.moved = true;
            if (drag.moved) { const dt = dx / cssW * (drag.t1 - drag.t0); setView(drag.t0 - dt, drag.t1 - dt); }
            tooltip.hidden = true; return;
          }
          const x = e.clientX - r.left, y = e.clientY - r.top;
          if (x < 0 || y < 0 || x > r.width || y > r.height) { tooltip.hidden = true; return; }
          const h = hit(x, y);
          if (!h) { tooltip.hidden = true; return; }
          tooltip.textContent = describe(h); tooltip.hidden = false;
          tooltip.style.left = Math.min(e.clientX + 12, window.innerWidth - 660) + 'px'; tooltip.style.top = (e.clientY + 14) + 'px';
        });
        canvas.addEventListener('wheel', function (e) {
          e.preventDefault();
          const r = canvas.getBoundingClientRect();
          if (Math.abs(e.deltaX) > Math.abs(e.deltaY)) { const dt = e.deltaX / cssW * (view.t1 - view.t0); setView(view.t0 + dt, view.t1 + dt); return; }
          zoom(Math.pow(1.0015, e.deltaY), e.clientX - r.left);
        }, { passive: false });
        canvas.addEventListener('dblclick', function () { setView(full.t0, full.t1); });
        document.getElementById('zoom-in').onclick = function () { zoom(0.5); };
        document.getElementById('zoom-out').onclick = function () { zoom(2); };
        document.getElementById('zoom-reset').onclick = function () { setView(full.t0, full.t1); };
        window.addEventListener('keydown', function (e) {
          const span = view.t1 - view.t0;
          if (e.key === '+' || e.key === '=') zoom(0.5);
          else if (e.key === '-') zoom(2);
          else if (e.key === '0') setView(full.t0, full.t1);
          else if (e.key === 'ArrowLeft') setView(view.t0 - span / 5, view.t1 - span / 5);
          else if (e.key === 'ArrowRight') setView(view.t0 + span / 5, view.t1 + span / 5);
        });

        // Expectations, linked to the events they measured.
        const traceLanes = lanes.map(function (l, i) { return i; }).filter(function (i) { return lanes[i].kind === 'core' || lanes[i].kind === 'faults'; });
        function resolve(index) {
          for (const i of traceLanes) {
            const j = lowerBound(lanes[i].p, index);
            if (j < lanes[i].count && lanes[i].p[j] === index) return { lane: i, item: j };
          }
          return null;
        }
        function focus(items, times) {
          highlight = items;
          const ts = times.length ? times : items.map(function (h) { return lanes[h.lane].t[h.item]; });
          if (ts.length) {
            const lo = Math.min.apply(null, ts), hi = Math.max.apply(null, ts);
            const pad = Math.max((hi - lo) * 0.1, 20000);
            setView(lo - pad, hi + pad);
          } else draw();
          timeline.scrollIntoView({ block: 'start' });
        }
        const list = document.getElementById('expectations');
        data.expectations.forEach(function (e, i) {
          const li = document.createElement('li');
          li.className = 'expectation ' + (e.passed ? 'pass' : 'fail');
          li.dataset.index = i; li.dataset.passed = e.passed; li.dataset.type = e.type; li.dataset.evidence = e.evidence.length;
          const verdict = document.createElement('span'); verdict.className = 'verdict'; verdict.textContent = e.passed ? 'PASS' : 'FAIL';
          const message = document.createElement('span'); message.className = 'message'; message.textContent = e.message;
          const count = document.createElement('span'); count.className = 'evidence-count';
          count.textContent = e.evidence.length + ' event(s) linked' + (e.omitted ? ', ' + e.omitted + ' more measured' : '');
          li.appendChild(verdict); li.appendChild(message); li.appendChild(count);
          li.addEventListener('click', function () {
            document.querySelectorAll('li.expectation.selected').forEach(function (x) { x.classList.remove('selected'); });
            li.classList.add('selected');
            const items = e.evidence.map(resolve).filter(function (h) { return h !== null; });
            timeline.dataset.selectedExpectation = i;
            details.textContent = (e.passed ? 'PASS ' : 'FAIL ') + e.message + '\n' + e.evidence.length + ' event(s) measured that decide it' +
              (e.omitted ? ' (' + e.omitted + ' more not linked)' : '') + ':\n' +
              items.slice(0, 20).map(function (h, n) { return e.roles[n] + ': ' + describe(h); }).join('\n');
            focus(items, e.evidenceUs);
          });
          list.appendChild(li);
        });
        if (!data.expectations.length) list.innerHTML = '<li class="none">The manifest lists no expectations.</li>';

        // Baseline comparisons.
        const baselines = document.getElementById('baselines');
        const baselineLane = lanes.findIndex(function (l) { return l.kind === 'baseline'; });
        data.baselines.forEach(function (b) {
          const div = document.createElement('div'); div.className = 'baseline ' + (b.passed ? 'pass' : 'fail'); div.dataset.core = b.core; div.dataset.passed = b.passed;
          const head = document.createElement('div'); head.textContent = (b.passed ? 'PASS ' : 'FAIL ') + 'baseline ' + b.core + ': ' + b.counts;
          div.appendChild(head);
          if (!b.passed) {
            const button = document.createElement('button'); button.textContent = 'show the differences on the timeline';
            button.onclick = function () {
              const lane = lanes[baselineLane], items = [];
              for (let j = 0; j < lane.count && items.length < 256; j++) items.push({ lane: baselineLane, item: j });
              focus(items, []);
            };
            div.appendChild(button);
            const pre = document.createElement('pre'); pre.textContent = b.text; div.appendChild(pre);
          }
          baselines.appendChild(div);
        });
        if (!data.baselines.length) baselines.textContent = 'No baseline compared.';
        const errors = document.getElementById('errors');
        data.errors.forEach(function (e) { const d = document.createElement('div'); d.className = 'error'; d.textContent = e; errors.appendChild(d); });

        // Plots, on the timeline's time axis.
        const plotsBox = document.getElementById('plots');
        const plots = data.plots.map(function (p) {
          const div = document.createElement('div'); div.className = 'plot'; div.dataset.title = p.title;
          const h = document.createElement('h3'); h.textContent = p.title + ' (' + p.unit + ')'; div.appendChild(h);
          const c = document.createElement('canvas'); div.appendChild(c);
          const legend = document.createElement('div'); legend.className = 'legend'; div.appendChild(legend);
          const series = p.series.map(function (s, i) {
            const color = palette[i % palette.length];
            const span = document.createElement('span'); const sw = document.createElement('i'); sw.style.background = color;
            span.appendChild(sw); span.appendChild(document.createTextNode(s.name)); legend.appendChild(span);
            let max = 0; for (const v of s.v) if (v !== null && v > max) max = v;
            return { name: s.name, t: undelta(s.t), v: s.v, points: s.points, color: color, max: max };
          });
          plotsBox.appendChild(div);
          return { canvas: c, series: series, max: Math.max(1e-9, Math.max.apply(null, series.map(function (s) { return s.max; }).concat([0]))), unit: p.unit };
        });
        if (!plots.length) plotsBox.textContent = 'Nothing to plot in this set.';
        function drawPlots() {
          plots.forEach(function (plot) {
            const c = plot.canvas, ratio = window.devicePixelRatio || 1, W = Math.max(200, c.clientWidth), H = 160;
            if (c.width !== Math.round(W * ratio)) { c.width = Math.round(W * ratio); c.height = Math.round(H * ratio); }
            const g = c.getContext('2d'); g.setTransform(ratio, 0, 0, ratio, 0, 0); g.clearRect(0, 0, W, H);
            const left = 221, w = W - left - 4, sx = w / (view.t1 - view.t0), sy = (H - 20) / plot.max;
            g.font = '11px system-ui, sans-serif'; g.fillStyle = '#555';
            g.fillText(plot.max.toPrecision(4) + ' ' + plot.unit, 6, 14); g.fillText('0', 6, H - 6);
            g.strokeStyle = '#ddd'; g.strokeRect(left, 4, w, H - 14);
            g.save(); g.beginPath(); g.rect(left, 0, w, H); g.clip();
            plot.series.forEach(function (s) {
              g.strokeStyle = s.color; g.fillStyle = s.color; g.beginPath();
              const lo = Math.max(0, lowerBound(s.t, view.t0) - 1), hi = Math.min(s.t.length, lowerBound(s.t, view.t1) + 1);
              let first = true;
              for (let j = lo; j < hi; j++) {
                if (s.v[j] === null) continue;
                const x = left + (s.t[j] - view.t0) * sx, y = H - 10 - s.v[j] * sy;
                if (s.points) g.fillRect(x - 1.5, y - 1.5, 3, 3);
                else if (first) { g.moveTo(x, y); first = false; } else g.lineTo(x, y);
              }
              if (!s.points) g.stroke();
            });
            g.restore();
          });
        }

        window.addEventListener('resize', resize);
        resize();
        document.body.dataset.renderMs = (performance.now() - started).toFixed(1);
        document.body.dataset.ready = 'true';
        })();
        """#
}
