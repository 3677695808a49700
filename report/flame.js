/*
 * psup's flame graph: an SVG drawing of a calling-context tree, fed by the
 * inline JSON that report/html.c writes (rep_html_flame()). No library, no
 * network. Click a frame to zoom into it, click it again or "reset zoom" to
 * zoom out; the search box (or page.html?search=TEXT) highlights the frames
 * whose function matches (a substring, or /regexp/) and says their share of
 * all samples; hovering shows counts.
 *
 * Data (element ID-data): {"total": N, "names": [...], "nodes": [parent,
 * name, image, inclusive, self, flags, ...]}, six numbers per node in
 * preorder, node 0 the root. flags: 1 inlined, 2 thread start. With an
 * element ID-base holding a base tree in the same form the graph is
 * differential: each frame of the new tree is coloured by the
 * change of its share of all samples against the frame at the same path in
 * the base tree (red: grew, blue: shrank).
 */
"use strict";

function psupFlame(id) {
	var t0 = performance.now();
	var box = document.getElementById(id);
	var data = JSON.parse(document.getElementById(id + "-data").textContent);
	var bel = document.getElementById(id + "-base");
	var bdata = bel ? JSON.parse(bel.textContent) : null;
	var svgNS = "http://www.w3.org/2000/svg";
	var ROW = 18;

	function build(d) {
		var v = d.nodes, n = v.length / 6, nodes = new Array(n);
		for (var i = 0; i < n; i++) {
			var k = i * 6, p = v[k];
			var nd = { i: i, name: d.names[v[k + 1]], image: d.names[v[k + 2]],
				   v: v[k + 3], self: v[k + 4], flags: v[k + 5], kids: [],
				   parent: i ? nodes[p] : null, depth: i ? nodes[p].depth + 1 : 0 };
			nodes[i] = nd;
			if (i)
				nodes[p].kids.push(nd);
		}
		return nodes;
	}
	var nodes = build(data), root = nodes[0], total = data.total || 1;
	var base = bdata ? build(bdata) : null, btotal = bdata ? bdata.total || 1 : 1;
	var maxDelta = 0;

	/* differential: the base frame at the same path (function and image at
	 * every level) */
	function match(a, b) {
		a.b = b ? b.v : 0;
		a.delta = a.v / total - a.b / btotal;
		if (Math.abs(a.delta) > maxDelta)
			maxDelta = Math.abs(a.delta);
		var map = null;
		if (b && b.kids.length) {
			map = new Map();
			for (var j = 0; j < b.kids.length; j++)
				map.set(b.kids[j].name + "\u0000" + b.kids[j].image, b.kids[j]);
		}
		for (var i = 0; i < a.kids.length; i++) {
			var k = a.kids[i];
			match(k, map ? map.get(k.name + "\u0000" + k.image) : null);
		}
	}
	if (base)
		match(root, base[0]);

	var svg = document.createElementNS(svgNS, "svg");
	svg.setAttribute("class", "flame-svg");
	var tip = document.createElement("div");
	tip.className = "flame-tip";
	var search = box.querySelector(".flame-search");
	var reset = box.querySelector(".flame-reset");
	var status = box.querySelector(".flame-status");
	box.appendChild(svg);
	box.appendChild(tip);

	var zoom = root, re = null, drawn = [];

	function hash(s) {
		var h = 2166136261;
		for (var i = 0; i < s.length; i++)
			h = Math.imul(h ^ s.charCodeAt(i), 16777619);
		return (h >>> 0) / 4294967296;
	}
	function color(nd) {
		if (base) {
			if (!nd.b)
				return "rgb(220,40,40)";
			var x = maxDelta > 0 ? nd.delta / maxDelta : 0;
			var c = Math.round(245 - 160 * Math.abs(x));
			return x >= 0 ? "rgb(245," + c + "," + c + ")" : "rgb(" + c + "," + c + ",245)";
		}
		var h = hash(nd.name || "");
		if (nd.flags & 1)
			return "hsl(" + Math.round(170 + 30 * h) + ",50%," + Math.round(62 + 10 * h) + "%)";
		return "hsl(" + Math.round(10 + 40 * h) + ",85%," + Math.round(55 + 12 * h) + "%)";
	}
	function pct(x, of) {
		return (of ? (100 * x / of) : 0).toFixed(2) + "%";
	}
	function matches(nd) {
		return re && nd.i && re.test(nd.name || "");
	}

	function render() {
		var W = Math.max(box.clientWidth || 0, 400);
		var scale = W / (zoom.v || 1), minW = 0.5;
		/* the frames to draw: the zoomed frame's ancestors at full width,
		 * its subtree in proportion, nothing narrower than minW */
		var list = [], maxd = zoom.depth;
		for (var a = zoom.parent; a; a = a.parent)
			list.push([a, 0, W, true]);
		var stack = [[zoom, 0]];
		while (stack.length) {
			var e = stack.pop(), nd = e[0], x = e[1], w = nd.v * scale;
			if (w < minW)
				continue;
			list.push([nd, x, w, false]);
			if (nd.depth > maxd)
				maxd = nd.depth;
			var cx = x;
			for (var i = 0; i < nd.kids.length; i++) {
				var k = nd.kids[i];
				stack.push([k, cx]);
				cx += k.v * scale;
			}
		}
		var H = (maxd + 1) * ROW;
		svg.setAttribute("width", W);
		svg.setAttribute("height", H);
		svg.setAttribute("viewBox", "0 0 " + W + " " + H);
		var frag = document.createDocumentFragment();
		drawn = list;
		var hitV = 0;
		for (var j = 0; j < list.length; j++) {
			var it = list[j], n = it[0], y = H - (n.depth + 1) * ROW;
			var g = document.createElementNS(svgNS, "g");
			g.setAttribute("class", "fr" + (it[3] ? " anc" : "") + (matches(n) ? " hl" : ""));
			g.setAttribute("data-i", j);
			var r = document.createElementNS(svgNS, "rect");
			r.setAttribute("x", it[1].toFixed(1));
			r.setAttribute("y", y);
			r.setAttribute("width", Math.max(it[2] - 0.5, 0.1).toFixed(1));
			r.setAttribute("height", ROW - 1);
			r.setAttribute("fill", color(n));
			g.appendChild(r);
			if (it[2] > 28) {
				var label = n.i ? n.name : "all (" + n.v + " samples)";
				var fit = Math.floor((it[2] - 6) / 6.6);
				if (label.length > fit)
					label = fit > 2 ? label.slice(0, fit - 2) + ".." : "";
				if (label) {
					var tx = document.createElementNS(svgNS, "text");
					tx.setAttribute("x", (it[1] + 3).toFixed(1));
					tx.setAttribute("y", y + ROW - 5);
					tx.textContent = label;
					g.appendChild(tx);
				}
			}
			frag.appendChild(g);
		}
		while (svg.firstChild)
			svg.removeChild(svg.firstChild);
		svg.appendChild(frag);
		/* the searched share: every sample once, through the outermost match */
		if (re) {
			var st = [root];
			while (st.length) {
				var q = st.pop();
				if (matches(q)) {
					hitV += q.v;
					continue;
				}
				for (var m = 0; m < q.kids.length; m++)
					st.push(q.kids[m]);
			}
		}
		status.textContent = (zoom !== root ? "zoomed: " + (zoom.name || "") + " (" +
				      pct(zoom.v, total) + ")  " : "") +
				     (re ? "matched: " + pct(hitV, total) + " of samples" : "");
		reset.disabled = zoom === root;
	}

	function nodeOf(ev) {
		var g = ev.target.closest ? ev.target.closest("g.fr") : null;
		return g ? drawn[+g.getAttribute("data-i")][0] : null;
	}
	svg.addEventListener("click", function (ev) {
		var nd = nodeOf(ev);
		if (nd) {
			zoom = nd === zoom ? (nd.parent || root) : nd;
			render();
		}
	});
	svg.addEventListener("mousemove", function (ev) {
		var nd = nodeOf(ev);
		if (!nd) {
			tip.style.display = "none";
			return;
		}
		var s = (nd.i ? nd.name : "all") + "\n";
		if (nd.image)
			s += nd.image + (nd.flags & 1 ? " (inlined)" : "") + (nd.flags & 2 ? " (thread start)" : "") + "\n";
		s += nd.v + " samples, " + pct(nd.v, total) + " of all";
		if (zoom !== root)
			s += ", " + pct(nd.v, zoom.v) + " of zoom";
		s += "\nself: " + nd.self + " samples, " + pct(nd.self, total);
		if (base)
			s += "\nbase: " + nd.b + " samples, " + pct(nd.b, btotal) + "; change " +
			     (nd.delta >= 0 ? "+" : "") + (100 * nd.delta).toFixed(2) + " points";
		tip.textContent = s;
		var rect = box.getBoundingClientRect();
		tip.style.display = "block";
		tip.style.left = Math.min(ev.clientX - rect.left + 12, rect.width - 320) + "px";
		tip.style.top = (ev.clientY - rect.top + 16) + "px";
	});
	svg.addEventListener("mouseleave", function () {
		tip.style.display = "none";
	});
	search.addEventListener("input", function () {
		var q = search.value;
		re = null;
		if (q) {
			var m = /^\/(.*)\/$/.exec(q);
			try {
				re = m ? new RegExp(m[1]) : new RegExp(q.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "i");
			} catch (err) {
				re = null;
			}
		}
		render();
	});
	reset.addEventListener("click", function () {
		zoom = root;
		render();
	});
	window.addEventListener("resize", render);
	/* a search given in the address (page.html?search=TEXT), for links */
	var given = /[?&]search=([^&#]*)/.exec(window.location.search);
	if (given) {
		try {
			search.value = decodeURIComponent(given[1].replace(/\+/g, " "));
		} catch (err) {
			search.value = given[1];
		}
		search.dispatchEvent(new Event("input"));
	} else {
		render();
	}
	box.setAttribute("data-nodes", nodes.length);
	/* for tests: the time this took, and since the page started loading */
	box.setAttribute("data-ms", (performance.now() - t0).toFixed(1));
	box.setAttribute("data-page-ms", performance.now().toFixed(1));
	box.setAttribute("data-ready", "1");
}
