// The partition map's behaviour: arcs between boxes, folding repeats, and the details panel for a
// box, a buffer or a finding. Everything it needs is in the page (#map-data); it loads nothing.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("map-data").textContent);
  const views = {};
  for (const v of data.views) views[v.side] = v;
  const panel = document.getElementById("panel");
  const MAX_ROWS = 500;

  function text(tag, content, cls) {
    const el = document.createElement(tag);
    if (content !== undefined) el.textContent = content;
    if (cls) el.className = cls;
    return el;
  }

  function boxElement(side, index) {
    return document.querySelector(`#${side}-view .box[data-box="${index}"]`);
  }

  // A box hidden in a folded run is drawn at the box that stands for it in the first period.
  function shownBox(view, index) {
    for (const [start, period, repeats] of view.runs) {
      if (index >= start && index < start + period * repeats) {
        const el = boxElement(view.side, index);
        if (el && el.offsetParent === null) return start + ((index - start) % period);
        return index;
      }
    }
    return index;
  }

  function drawArcs(side) {
    const view = views[side];
    const lane = document.querySelector(`#${side}-view .lane`);
    const svg = lane.querySelector("svg.arcs");
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    const top = lane.getBoundingClientRect().top;
    const seen = new Set();
    const ns = "http://www.w3.org/2000/svg";
    for (const [from, to, bytes] of view.edges) {
      const a = shownBox(view, from);
      const b = shownBox(view, to);
      if (a === b || seen.has(a + ":" + b)) continue;
      seen.add(a + ":" + b);
      const ea = boxElement(side, a);
      const eb = boxElement(side, b);
      if (!ea || !eb) continue;
      const ra = ea.getBoundingClientRect();
      const rb = eb.getBoundingClientRect();
      const y1 = ra.top + ra.height / 2 - top;
      const y2 = rb.top + rb.height / 2 - top;
      const bend = Math.min(86, 8 + Math.abs(y2 - y1) / 12);
      const path = document.createElementNS(ns, "path");
      path.setAttribute("d", `M0 ${y1} C ${bend} ${y1}, ${bend} ${y2}, 0 ${y2}`);
      path.setAttribute("stroke-width", String(Math.max(1, Math.min(6, Math.log10(bytes + 1) - 2))));
      path.dataset.from = String(a);
      path.dataset.to = String(b);
      const title = document.createElementNS(ns, "title");
      title.textContent = `${view.labels[from]} #${from} → ${view.labels[to]} #${to}: ${bytes} bytes`;
      path.appendChild(title);
      svg.appendChild(path);
    }
  }

  function drawAllArcs() {
    drawArcs("plan");
    drawArcs("stock");
  }

  function clearMarks() {
    for (const cls of ["selected", "chain", "reader", "on-path"]) {
      for (const el of document.querySelectorAll("." + cls)) el.classList.remove(cls);
    }
    for (const el of document.querySelectorAll(".arcs path.lit")) el.classList.remove("lit");
  }

  // Marks the boxes (on `sides`) holding `nodes` with `cls`, unfolding runs they are hidden in.
  function markBoxes(nodes, cls, sides) {
    let first = null;
    for (const side of sides) {
      const view = views[side];
      for (const n of nodes) {
        const b = view.box_of[n];
        if (b < 0) continue;
        const el = boxElement(side, b);
        if (!el) continue;
        const run = el.closest(".run.folded");
        if (run) unfold(run);
        el.classList.add(cls);
        if (!first) first = el;
      }
    }
    return first;
  }

  function nodeTable(rows) {
    const table = document.createElement("table");
    const head = table.createTHead().insertRow();
    for (const h of ["node", "op", "shape", "dtype", "supported", "where"]) head.appendChild(text("th", h));
    const body = table.createTBody();
    for (const [n, cls, where] of rows.slice(0, MAX_ROWS)) {
      const [name, op, shape, dtype, supported] = data.nodes[n];
      const tr = body.insertRow();
      tr.className = "node" + (cls ? " " + cls : "");
      tr.dataset.node = name;
      for (const cell of [name, op, shape, dtype, supported ? "yes" : "no", where || ""]) tr.appendChild(text("td", cell));
    }
    if (rows.length > MAX_ROWS) {
      const tr = body.insertRow();
      tr.appendChild(text("td", `… ${rows.length - MAX_ROWS} more nodes`));
    }
    return table;
  }

  function whereOn(side, n) {
    const b = views[side].box_of[n];
    return b < 0 ? "input" : `${views[side].labels[b]} #${b}`;
  }

  function showBox(side, index, el) {
    clearMarks();
    el.classList.add("selected");
    const view = views[side];
    panel.replaceChildren(
      text("h3", `${side}: ${view.labels[index]} #${index}`),
      text("p", `${view.boxes[index].length} nodes, in topological order.`),
      nodeTable(view.boxes[index].map((n) => [n, "", ""])),
    );
  }

  function showBuffer(row) {
    clearMarks();
    row.classList.add("selected");
    const b = data.buffers[Number(row.dataset.index)];
    markBoxes(b.chain, "chain", ["plan", "stock"]);
    markBoxes(b.readers, "reader", ["plan", "stock"]);
    const rows = b.chain.map((n) => [n, "chain", whereOn("plan", n)])
      .concat(b.readers.map((n) => [n, "reader", whereOn("plan", n)]));
    panel.replaceChildren(
      text("h3", `buffer ${b.name}: ${b.strategy}` + (b.partition ? ` in ${b.partition}` : "")),
      text("p", b.reason),
      text("p", `${b.chain.length} chain nodes (placeholder to writer), ${b.readers.length} readers.`),
      nodeTable(rows),
    );
    drawAllArcs();
  }

  function showFinding(item) {
    clearMarks();
    item.classList.add("selected");
    const f = data.findings[Number(item.dataset.index)];
    const first = markBoxes(f.marks, "on-path", [f.side]);
    drawAllArcs();
    const view = views[f.side];
    const boxes = f.marks.map((n) => shownBox(view, view.box_of[n]));
    for (let i = 0; i + 1 < boxes.length; i++) {
      const sel = `#${f.side}-view .arcs path[data-from="${boxes[i]}"][data-to="${boxes[i + 1]}"]`;
      for (const p of document.querySelectorAll(sel)) p.classList.add("lit");
    }
    panel.replaceChildren(
      text("h3", `${f.rule} on the ${f.side === "plan" ? "plan" : "stock proposal"}`),
      text("p", f.message),
      nodeTable(f.marks.map((n) => [n, "on-path", whereOn(f.side, n)])),
    );
    if (first) first.scrollIntoView({ block: "nearest" });
  }

  function unfold(run) {
    run.classList.remove("folded");
    const button = run.querySelector(".unfold");
    if (button) button.textContent = "fold repeats";
  }

  function toggle(run) {
    if (run.classList.contains("folded")) {
      unfold(run);
    } else {
      run.classList.add("folded");
      const button = run.querySelector(".unfold");
      const period = Number(run.dataset.period);
      const what = period === 1 ? "1 box" : `${period} boxes`;
      button.textContent = `${what} repeated ×${run.dataset.repeats}: show all`;
    }
    drawAllArcs();
  }

  function activate(target) {
    const unfoldButton = target.closest(".unfold");
    if (unfoldButton) return toggle(unfoldButton.closest(".run"));
    const box = target.closest(".box");
    if (box) return showBox(box.closest(".view").dataset.side, Number(box.dataset.box), box);
    const buffer = target.closest("tr.buffer");
    if (buffer) return showBuffer(buffer);
    const finding = target.closest("li.finding");
    if (finding) return showFinding(finding);
  }

  // Find a node by name: the boxes holding it on both sides are marked, and the panel says where.
  const index = new Map(data.nodes.map((n, i) => [n[0], i]));
  const names = document.getElementById("node-names");
  if (data.nodes.length <= 20000) {
    for (const [name] of data.nodes) names.appendChild(new Option(name));
  }
  document.getElementById("find").addEventListener("submit", (event) => {
    event.preventDefault();
    const name = document.getElementById("find-node").value.trim();
    const n = index.get(name);
    clearMarks();
    if (n === undefined) {
      panel.replaceChildren(text("p", `No node is named ${name}.`));
      return;
    }
    const first = markBoxes([n], "on-path", ["plan", "stock"]);
    drawAllArcs();
    panel.replaceChildren(
      text("h3", name),
      text("p", `plan: ${whereOn("plan", n)}; stock: ${whereOn("stock", n)}`),
      nodeTable([[n, "on-path", whereOn("plan", n)]]),
    );
    if (first) first.scrollIntoView({ block: "nearest" });
  });

  document.addEventListener("click", (event) => activate(event.target));
  document.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && event.target instanceof Element) activate(event.target);
  });
  window.addEventListener("resize", drawAllArcs);
  drawAllArcs();
})();
