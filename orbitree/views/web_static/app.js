// orbitree web view: the tree, node details, blackboard, plots and timeline of a run.
// Plain JS with SVG and canvas, written for orbitree; it loads nothing from anywhere else.
// The server sends an "init" message (everything) then "update" messages (what changed) as
// server-sent events; see orbitree/views/state.py. Buttons POST to /api/control, and the
// executive acts on them between two ticks. The 3-D scene is scene.js (a module using the
// vendored three.js): this script hands it each message as an "orbitree:init" or
// "orbitree:update" event. The camera image and the LVLH panel are drawn here.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const SVG = "http://www.w3.org/2000/svg";
  const COMPOSITES = { sequence: "→", fallback: "?", parallel: "⇉" };
  const DECORATORS = new Set(["retry", "repeat", "timeout", "inverter", "one_shot", "rate_limit", "guard"]);
  const NODE_W = 230, NODE_H = 54, COL_W = 272, ROW_H = 64;
  const MIN_SCALE = 0.9;  // fitting a big tree never shrinks labels below ~11 px: pan instead
  const COLORS = ["#2f6fd6", "#d6452f", "#2c9a4e", "#a63ad6", "#e8a200", "#16a3b8"];

  const S = {
    mode: "live", header: null, nodes: [], children: [], parentOf: [], phases: [],
    statuses: [], feedback: [], bb: {}, bbT: {}, bbText: {}, series: {}, events: [], changes: [],
    traceStatus: [], lastChange: [], nodeUs: {}, control: {}, done: null, scene: {}, camera: {},
    tick: { n: -1, t: 0, tick_ms: 0, deadline_misses: 0 },
    selected: null, collapsed: new Set(), connected: false,
  };
  // For tests and curious users: the status changes this page received, in order.
  window.orbitree = { trace: [], messages: 0, state: S };

  // ------------------------------------------------------------------------------------------
  // messages
  let source = null;
  function connect() {
    source = new EventSource("events");
    source.onopen = () => { S.connected = true; schedule("state"); };
    source.onerror = () => {
      S.connected = false;
      if (S.mode === "live" && S.done) source.close();  // the run is over and so is the server
      schedule("state");
    };
    source.onmessage = (event) => {
      const msg = JSON.parse(event.data);
      window.orbitree.messages += 1;
      if (msg.type === "init") init(msg);
      else if (msg.type === "update") update(msg);
      else if (msg.type === "waiting") { S.mode = msg.mode; $("mission").textContent = "waiting for the mission…"; }
    };
  }

  function init(msg) {
    S.mode = msg.mode;
    S.header = msg.header;
    S.nodes = msg.header.nodes || [];
    S.children = S.nodes.map(() => []);
    S.parentOf = S.nodes.map((n) => n.parent);
    for (const n of S.nodes) if (n.parent !== null && n.parent !== undefined) S.children[n.parent].push(n.id);
    S.phases = msg.phases || [];
    S.statuses = msg.statuses.slice();
    S.feedback = msg.feedback.slice();
    S.bb = msg.bb || {};
    S.bbT = msg.bb_t || {};
    S.bbText = msg.bb_text || {};
    S.series = msg.series || {};
    S.events = msg.events || [];
    S.changes = [];
    S.traceStatus = S.nodes.map(() => "INVALID");
    S.lastChange = S.nodes.map(() => null);
    window.orbitree.trace = [];
    window.orbitree.traceComplete = msg.changes_complete !== false;
    addChanges(msg.changes || []);
    S.nodeUs = msg.node_us || {};
    S.control = msg.control || {};
    S.done = msg.done || null;
    S.tick = msg.tick;
    if (S.selected !== null && S.selected >= S.nodes.length) S.selected = null;
    S.scene = msg.scene || {};
    S.camera = msg.camera || {};
    cameraShown = null;
    window.dispatchEvent(new CustomEvent("orbitree:init", { detail: msg }));
    document.title = `orbitree · ${msg.header.mission}`;
    $("mission").textContent = msg.header.mission;
    $("mode").textContent = S.mode;
    $("replay-bar").hidden = S.mode !== "replay";
    $("btn-resume").textContent = S.mode === "replay" ? "▶ Play" : "▶ Resume";
    buildBlackboard();
    schedule("structure", "fit");
  }

  function update(msg) {
    if (!S.header) return;
    S.tick = msg.tick;
    if (msg.statuses) S.statuses = msg.statuses;
    if (msg.feedback) S.feedback = msg.feedback;
    if (msg.changes) addChanges(msg.changes);
    if (msg.bb) {
      Object.assign(S.bb, msg.bb);
      Object.assign(S.bbT, msg.bb_t);
      for (const key of Object.keys(msg.bb)) delete S.bbText[key];  // a new value may have no units
      Object.assign(S.bbText, msg.bb_text || {});
    }
    if (msg.series) {
      for (const [name, rows] of Object.entries(msg.series)) {
        (S.series[name] = S.series[name] || []).push(...rows);
      }
      schedule("plots");
    }
    if (msg.events) S.events.push(...msg.events);
    if (msg.scene) {
      for (const [field, values] of Object.entries(msg.scene)) Object.assign(S.scene[field] = S.scene[field] || {}, values);
      window.dispatchEvent(new CustomEvent("orbitree:update", { detail: msg }));
    }
    if (msg.camera) { S.camera = msg.camera; schedule("camera"); }
    if (msg.node_us) S.nodeUs = msg.node_us;
    if (msg.control) S.control = msg.control;
    if ("done" in msg) S.done = msg.done;
    schedule("state");
  }

  function addChanges(rows) {
    for (const row of rows) {
      const [n, t, id, status] = row;
      S.changes.push(row);
      window.orbitree.trace.push([n, id, status]);
      S.lastChange[id] = { n, t, from: S.traceStatus[id], to: status };
      S.traceStatus[id] = status;
    }
  }

  // ------------------------------------------------------------------------------------------
  // drawing is batched to one animation frame
  const dirty = new Set();
  let frame = 0;
  function schedule(...what) {
    for (const w of what) dirty.add(w);
    if (!frame) frame = requestAnimationFrame(draw);
  }
  let lastPlots = 0, plotTimer = 0;
  function draw() {
    frame = 0;
    if (!S.header) { drawHeader(); return; }
    if (dirty.has("structure")) buildTree();
    if (dirty.has("fit")) fitTree();
    drawHeader();
    drawTreeStatus();
    drawDetail();
    drawBlackboard();
    drawCamera();
    const now = performance.now();
    if (dirty.has("structure") || dirty.has("plots") || now - lastPlots > 250) {
      drawPlots();  // the plots and the timeline redraw whole, so at most 4 times a second
      drawTimeline();
      drawLvlh();
      lastPlots = now;
    } else if (!plotTimer) plotTimer = setTimeout(() => { plotTimer = 0; schedule("plots"); }, 260);
    dirty.clear();
  }

  // ------------------------------------------------------------------------------------------
  // header and controls
  function drawHeader() {
    const c = S.control, tick = S.tick;
    $("time").textContent = (+tick.t).toFixed(3);
    $("tick").textContent = tick.n >= 0 ? tick.n : "–";
    $("tick-ms").textContent = tick.n >= 0 ? (+tick.tick_ms).toFixed(3) : "–";
    $("misses").textContent = tick.deadline_misses || 0;
    const chip = $("run-state");
    let state, text;
    if (!S.header) [state, text] = [S.connected ? "connecting" : "disconnected", S.connected ? "waiting" : "disconnected"];
    else if (S.mode === "live" && S.done) [state, text] = [S.done.status, `${S.done.status}: ${S.done.reason || ""}`];
    else if (S.mode === "replay" && c.finished) [state, text] = [(S.done && S.done.status) || "SUCCESS", `end of log: ${(S.done && S.done.status) || "?"}`];
    else if (!S.connected) [state, text] = ["disconnected", "disconnected"];
    else if (S.mode === "replay") [state, text] = c.playing ? ["running", `playing ×${c.speed}`] : ["paused", "paused" + (c.reason ? ` (${c.reason})` : "")];
    else if (c.held) [state, text] = ["paused", `paused before tick ${c.held_at}` + (c.reason && c.reason !== "pause" ? ` (${c.reason})` : "")];
    else if (c.paused) [state, text] = ["paused", "pausing…"];
    else [state, text] = ["running", "running"];
    chip.dataset.state = state;
    chip.textContent = text;
    const over = S.mode === "live" ? !!(S.done || c.finished) : false;
    if (S.mode === "replay") {
      $("btn-pause").disabled = !c.playing;
      $("btn-step").disabled = c.position >= c.count - 1;
      $("btn-resume").disabled = !!c.playing || !c.count;
      const slider = $("slider");
      slider.max = Math.max(0, (c.count || 1) - 1);
      if (!dragging) slider.value = c.position;
      $("slider-label").textContent = `${(+S.tick.t).toFixed(3)} / ${(+c.t_end || 0).toFixed(3)} s · record ${c.position + 1} of ${c.count}`;
      const speed = $("speed");
      if (document.activeElement !== speed) {
        const value = String(c.speed);
        if (![...speed.options].some((o) => o.value === value)) speed.add(new Option(`×${value}`, value));
        speed.value = value;
      }
    } else {
      $("btn-pause").disabled = over || !!c.paused || !S.connected;
      $("btn-step").disabled = over || !c.held || !S.connected;
      $("btn-resume").disabled = over || !c.paused || !S.connected;
    }
  }

  async function send(command) {
    const response = await fetch("api/control", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(command),
    });
    if (response.ok) {
      const reply = await response.json();
      // the stream may have told us first that the loop is now held (its reply was taken
      // before the hold began): keep that, and take the rest (breakpoints, flags) from the reply
      const heldSince = S.control.held && reply.paused && !reply.held;
      S.control = heldSince ? { ...reply, held: true, held_at: S.control.held_at } : reply;
      schedule("state");
    }
  }

  $("btn-pause").onclick = () => send({ action: "pause" });
  $("btn-step").onclick = () => send({ action: "step" });
  $("btn-resume").onclick = () => send({ action: "resume" });
  $("speed").onchange = (e) => send({ action: "speed", value: +e.target.value });
  let dragging = false, seekTimer = 0;
  $("slider").addEventListener("input", (e) => {
    dragging = true;
    clearTimeout(seekTimer);
    seekTimer = setTimeout(() => send({ action: "seek", index: +e.target.value }), 60);
  });
  $("slider").addEventListener("change", (e) => {
    clearTimeout(seekTimer);
    dragging = false;
    send({ action: "seek", index: +e.target.value });
  });
  $("btn-fit").onclick = () => fitTree();
  $("btn-expand").onclick = () => { S.collapsed.clear(); schedule("structure", "fit"); };
  document.addEventListener("keydown", (e) => {
    if (e.target.tagName === "INPUT" || e.target.tagName === "SELECT") return;
    const c = S.control;
    if (e.key === " ") {
      e.preventDefault();
      const paused = S.mode === "replay" ? !c.playing : c.paused;
      send({ action: paused ? "resume" : "pause" });
    } else if (e.key === "s" || e.key === ".") send({ action: "step" });
    else if (e.key === "f") fitTree();
  });

  // ------------------------------------------------------------------------------------------
  // the tree: laid out left to right, one row per visible leaf, parents centred on children
  const treeSvg = $("tree");
  let view = { x: 0, y: 0, w: 800, h: 400 }, content = { w: 800, h: 400 };
  let nodeEls = [], edgeEls = [];

  function el(name, attrs, parent) {
    const e = document.createElementNS(SVG, name);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (parent) parent.appendChild(e);
    return e;
  }

  function category(node) {
    if (node.kind in COMPOSITES) return "composite";
    if (DECORATORS.has(node.kind) || S.children[node.id].length) return "decorator";
    return "leaf";
  }

  function descendants(id) {
    let count = 0;
    const stack = [...S.children[id]];
    while (stack.length) { const k = stack.pop(); count += 1; stack.push(...S.children[k]); }
    return count;
  }

  function layout() {
    const pos = [];
    let row = 0;
    const place = (id, depth) => {
      const kids = S.collapsed.has(id) ? [] : S.children[id];
      let y;
      if (!kids.length) y = row++;
      else {
        const ys = kids.map((k) => place(k, depth + 1));
        y = (ys[0] + ys[ys.length - 1]) / 2;
      }
      pos[id] = { x: depth * COL_W, y: y * ROW_H };
      return y;
    };
    // the mission tree, then any other root (the safety recovery tree) below it, a row apart
    for (const n of S.nodes) {
      if (n.parent !== null && n.parent !== undefined) continue;
      if (n.id !== 0) row += 1;
      place(n.id, 0);
    }
    return { pos, rows: row };
  }

  function shorten(text, max) {
    text = String(text);
    return text.length <= max ? text : text.slice(0, max - 1) + "…";
  }

  function buildTree() {
    treeSvg.textContent = "";
    nodeEls = [];
    edgeEls = [];
    const { pos, rows } = layout();
    const edges = el("g", { class: "edges" }, treeSvg);
    const group = el("g", { class: "nodes" }, treeSvg);
    let depth = 0;
    for (const node of S.nodes) {
      const p = pos[node.id];
      if (!p) continue;
      depth = Math.max(depth, p.x);
      if (node.parent !== null && node.parent !== undefined && pos[node.parent]) {
        const a = pos[node.parent], x1 = a.x + NODE_W, y1 = a.y + NODE_H / 2, x2 = p.x, y2 = p.y + NODE_H / 2;
        const mid = (x1 + x2) / 2;
        edgeEls[node.id] = el("path", { class: "edge", d: `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}` }, edges);
      }
      const cat = category(node);
      const g = el("g", {
        class: `node cat-${cat}`, transform: `translate(${p.x},${p.y})`,
        "data-id": node.id, "data-name": node.name, "data-kind": node.kind, "data-status": "INVALID",
      }, group);
      const tip = el("title", {}, g);  // the node, where it is written, and its whole feedback
      tip.dataset.base = `${node.name} (${node.kind}) ${node.where || ""}`;
      tip.textContent = tip.dataset.base;
      el("rect", { class: "box", width: NODE_W, height: NODE_H, rx: cat === "leaf" ? 10 : 4 }, g);
      el("rect", { class: "stripe", x: 0, y: 0, width: 5, height: NODE_H, rx: 2 }, g);
      const glyph = COMPOSITES[node.kind];
      const textX = glyph ? 26 : 12;
      if (glyph) el("text", { class: "glyph", x: 11, y: 32 }, g).textContent = glyph;
      el("text", { class: "name", x: textX, y: 18 }, g).textContent = shorten(node.name, 26);
      const kind = el("text", { class: "kind", x: textX, y: 33 }, g);
      kind.textContent = node.kind;
      const feedback = el("text", { class: "feedback", x: textX, y: 47 }, g);
      let badge = null;
      if (S.children[node.id].length) {
        const collapsed = S.collapsed.has(node.id);
        const toggle = el("g", { class: "toggle", transform: `translate(${NODE_W},${NODE_H / 2})` }, g);
        el("circle", { r: 8 }, toggle);
        el("text", { x: -4, y: 4.5 }, toggle).textContent = collapsed ? "+" : "−";
        toggle.addEventListener("click", (e) => {
          e.stopPropagation();
          if (S.collapsed.has(node.id)) S.collapsed.delete(node.id); else S.collapsed.add(node.id);
          schedule("structure");
        });
        if (collapsed) {
          badge = el("text", { class: "badge", x: NODE_W + 14, y: NODE_H / 2 + 4 }, g);
          badge.textContent = `+${descendants(node.id)}`;
        }
      }
      const bp = el("circle", { class: "bp", cx: 0, cy: 0, r: 6 }, g);
      g.addEventListener("click", () => { S.selected = node.id; schedule("state"); });
      nodeEls[node.id] = { g, kind, feedback, tip, bp, badge, node, shown: null };
    }
    content = { w: depth + NODE_W + 60, h: Math.max(rows, 1) * ROW_H };
    applyView();
  }

  function drawTreeStatus() {
    const hidden = new Set();  // collapsed nodes with a RUNNING node inside
    for (const id of S.collapsed) {
      const stack = [...S.children[id]];
      while (stack.length) {
        const k = stack.pop();
        if (S.statuses[k] === "RUNNING") { hidden.add(id); break; }
        stack.push(...S.children[k]);
      }
    }
    const breakpoints = new Set(S.control.breakpoints || []);
    for (const item of nodeEls) {
      if (!item) continue;
      const id = item.node.id, status = S.statuses[id] || "INVALID";
      if (item.g.dataset.status !== status) item.g.dataset.status = status;
      item.g.classList.toggle("selected", S.selected === id);
      item.g.classList.toggle("hidden-running", hidden.has(id));
      item.bp.style.display = breakpoints.has(id) ? "" : "none";
      // a leaf says what it is doing on its own line (the whole text in the tooltip and the detail panel)
      const fb = S.feedback[id] && status !== "INVALID" ? S.feedback[id] : "";
      if (item.shown !== fb) {
        item.feedback.textContent = shorten(fb, 34);
        item.tip.textContent = fb ? `${item.tip.dataset.base}\n${fb}` : item.tip.dataset.base;
        item.shown = fb;
      }
      const edge = edgeEls[id];
      if (edge) edge.classList.toggle("running", status === "RUNNING");
    }
  }

  function applyView() {
    treeSvg.setAttribute("viewBox", `${view.x} ${view.y} ${view.w} ${view.h}`);
  }

  function fitTree() {
    const box = treeSvg.getBoundingClientRect();
    if (!box.width || !box.height) return;  // not laid out yet: fitted when it is (treeResized)
    const pad = 20;
    const w = content.w + 2 * pad, h = content.h + 2 * pad;
    // a small tree is enlarged up to 1.35; a big one shrinks no further than MIN_SCALE (pan and zoom)
    const fits = Math.min(1.35, box.width / w || 1, box.height / h || 1);
    const scale = Math.max(MIN_SCALE, fits);
    view = { x: -pad, y: -pad, w: box.width / scale, h: box.height / scale };
    if (fits < MIN_SCALE) {  // too big to show whole: show where the tree is running
      const running = S.nodes.filter((n) => S.statuses[n.id] === "RUNNING" && nodeEls[n.id]);
      const at = running.length ? running[running.length - 1] : null;  // the deepest, in pre-order
      const g = at && nodeEls[at.id].g.transform.baseVal.consolidate();
      if (g) {
        const { e: x, f: y } = g.matrix;
        view.x = Math.min(Math.max(-pad, x + NODE_W / 2 - view.w / 2), content.w + pad - view.w);
        view.y = Math.min(Math.max(-pad, y + NODE_H / 2 - view.h / 2), content.h + pad - view.h);
      }
    }
    applyView();
  }

  function svgPoint(event) {
    const pt = treeSvg.createSVGPoint();
    pt.x = event.clientX;
    pt.y = event.clientY;
    return pt.matrixTransform(treeSvg.getScreenCTM().inverse());
  }

  treeSvg.addEventListener("wheel", (e) => {
    e.preventDefault();
    const p = svgPoint(e), k = Math.exp(e.deltaY * 0.0015);
    view = { x: p.x - (p.x - view.x) * k, y: p.y - (p.y - view.y) * k, w: view.w * k, h: view.h * k };
    applyView();
  }, { passive: false });

  let drag = null;
  treeSvg.addEventListener("pointerdown", (e) => {
    if (e.target.closest && e.target.closest(".node")) return;
    drag = { x: e.clientX, y: e.clientY, view: { ...view } };
    treeSvg.classList.add("dragging");
    treeSvg.setPointerCapture(e.pointerId);
  });
  treeSvg.addEventListener("pointermove", (e) => {
    if (!drag) return;
    const scale = view.w / treeSvg.getBoundingClientRect().width;
    view = { ...drag.view, x: drag.view.x - (e.clientX - drag.x) * scale, y: drag.view.y - (e.clientY - drag.y) * scale };
    applyView();
  });
  treeSvg.addEventListener("pointerup", () => { drag = null; treeSvg.classList.remove("dragging"); });
  window.addEventListener("resize", () => schedule("fit", "plots"));
  // the tree's own box changes without the window's too (the page laid out after the first fit,
  // a panel shown or hidden): the fitted scale was measured on the old box, so fit again
  let treeBox = "";
  const treeResized = new ResizeObserver(([entry]) => {
    const size = `${Math.round(entry.contentRect.width)}x${Math.round(entry.contentRect.height)}`;
    if (size !== treeBox) { treeBox = size; schedule("fit"); }
  });
  treeResized.observe(treeSvg);

  // ------------------------------------------------------------------------------------------
  // node detail
  let detailKey = "";
  function drawDetail() {
    const body = $("detail-body");
    const id = S.selected;
    if (id === null || !S.nodes[id]) return;
    const node = S.nodes[id];
    const status = S.statuses[id];
    const change = S.lastChange[id];
    const us = S.nodeUs[String(id)];
    const isBp = (S.control.breakpoints || []).includes(id);
    const key = JSON.stringify([id, status, S.feedback[id], change, us, isBp]);
    if (key === detailKey) return;
    detailKey = key;
    body.className = "";
    body.textContent = "";
    const h = document.createElement("h3");
    h.textContent = node.name;
    body.appendChild(h);
    const sub = document.createElement("div");
    sub.className = "sub";
    sub.textContent = `${node.kind} · node ${id} · ${node.where || ""}`;
    body.appendChild(sub);
    const dl = document.createElement("dl");
    const row = (k, v) => {
      const dt = document.createElement("dt"), dd = document.createElement("dd");
      dt.textContent = k;
      dd.textContent = v;
      dl.append(dt, dd);
      return dd;
    };
    row("status", status).dataset.field = "status";
    row("feedback", S.feedback[id] || "—").dataset.field = "feedback";
    row("last change", change ? `tick ${change.n} (t = ${(+change.t).toFixed(3)} s): ${change.from} → ${change.to}` : "none yet");
    row("tick time", us ? `mean ${us.mean} µs, max ${us.max} µs over ${us.ticks} ticks (self)` : "not ticked yet");
    const params = node.params || {};
    const names = Object.keys(params);
    if (!names.length) row("parameters", "—");
    for (const name of names) row(name, formatValue(params[name], 200));
    body.appendChild(dl);
    const label = document.createElement("label");
    const box = document.createElement("input");
    box.type = "checkbox";
    box.id = "breakpoint";
    box.checked = isBp;
    box.onchange = () => send({ action: "break", node: id, on: box.checked });
    label.append(box, document.createTextNode("break when it becomes RUNNING"));
    body.appendChild(label);
  }

  // ------------------------------------------------------------------------------------------
  // blackboard
  const bbRows = new Map();
  function buildBlackboard() {
    const tbody = document.querySelector("#bb tbody");
    tbody.textContent = "";
    bbRows.clear();
  }

  function drawBlackboard() {
    const tbody = document.querySelector("#bb tbody");
    const keys = Object.keys(S.bb).sort();
    if (keys.length !== bbRows.size) {
      for (const key of keys) {
        if (bbRows.has(key)) continue;
        const tr = document.createElement("tr");
        tr.dataset.key = key;
        const k = document.createElement("td"), v = document.createElement("td"), w = document.createElement("td");
        k.className = "key"; v.className = "value"; w.className = "written";
        k.textContent = key;
        tr.append(k, v, w);
        bbRows.set(key, { tr, v, w, shown: null, at: null });
      }
      for (const key of keys) tbody.appendChild(bbRows.get(key).tr);  // keep them sorted
    }
    const now = S.tick.t;
    for (const key of keys) {
      const row = bbRows.get(key);
      const value = S.bb[key];
      if (row.shown !== value) {
        // the server's reading with units (poses in mm and deg, wrenches in N and N·m), else raw
        const text = S.bbText[key] !== undefined ? shorten(S.bbText[key], 160) : formatValue(value, 160);
        row.v.textContent = text;
        row.v.title = typeof value === "string" ? value : JSON.stringify(value);
        row.shown = value;
      }
      const at = S.bbT[key];
      if (row.at !== at) { row.w.textContent = at === undefined ? "" : `${(+at).toFixed(3)} s`; row.at = at; }
      row.tr.classList.toggle("fresh", at === now);
    }
    $("bb-count").textContent = `${keys.length} keys · values of tick ${S.tick.n}`;
  }

  function formatNumber(x) {
    if (typeof x !== "number") return String(x);
    if (Number.isInteger(x)) return String(x);
    const a = Math.abs(x);
    if (a !== 0 && (a < 1e-3 || a >= 1e5)) return x.toExponential(3);
    return String(+x.toPrecision(5));
  }

  function formatValue(value, max) {
    let text;
    if (value === null || value === undefined) text = "null";
    else if (typeof value === "number") text = formatNumber(value);
    else if (typeof value === "string") text = value;
    else if (typeof value === "boolean") text = String(value);
    else if (Array.isArray(value)) {
      const short = (x) => (typeof x === "number" && !Number.isInteger(x) ? String(+x.toPrecision(3)) : formatNumber(x));
      const item = (v) => (Array.isArray(v) ? "[" + v.map(short).join(" ") + "]" : typeof v === "object" && v !== null ? JSON.stringify(v) : formatNumber(v));
      text = "[" + value.map(item).join(Array.isArray(value[0]) ? " " : ", ") + "]";
    } else if (value.array && value.dtype) text = `array ${value.array.join("×")} ${value.dtype}`;
    else text = JSON.stringify(value);
    return shorten(text, max);
  }

  // ------------------------------------------------------------------------------------------
  // plots (canvas)
  function niceTicks(lo, hi, count) {
    const span = hi - lo || 1;
    const step0 = span / count, mag = Math.pow(10, Math.floor(Math.log10(step0)));
    const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => span / s <= count) || 10 * mag;
    const ticks = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) ticks.push(+v.toPrecision(12));
    ticks.step = step;
    return ticks;
  }

  function tickLabel(v, step) {  // as many decimals as the tick spacing needs
    const a = Math.max(Math.abs(v), step);
    if (a >= 1e5 || a < 1e-4) return v === 0 ? "0" : v.toExponential(1);
    return v.toFixed(Math.min(10, Math.max(0, -Math.floor(Math.log10(step) + 1e-9))));
  }

  function plotLines(prefix, labels) {
    const names = Object.keys(S.series).filter((n) => n === prefix || n.startsWith(prefix + ":")).sort();
    const lines = [];
    for (const name of names) {
      const owner = name.includes(":") && names.length > 1 ? name.split(":")[1] + " " : "";
      labels.forEach((label, i) => lines.push({ rows: S.series[name], col: i + 1, label: owner + label }));
    }
    return lines;
  }

  function drawPlots() {
    const tEnd = Math.max(S.mode === "replay" ? +S.control.t_end || 0 : 0, S.tick.t || 0, 1e-3);
    drawPlot($("plot-servo-t"), plotLines("servo_t", ["x", "y", "z"]), tEnd);
    drawPlot($("plot-servo-r"), plotLines("servo_r", ["rx", "ry", "rz"]), tEnd);
    drawPlot($("plot-gain"), plotLines("gain", ["λ"]), tEnd);
    drawPlot($("plot-force"), plotLines("force", ["fx", "fy", "fz"]), tEnd);
    drawPlot($("plot-torque"), plotLines("torque", ["tx", "ty", "tz"]), tEnd);
  }

  function drawPlot(canvas, lines, tEnd) {
    const dpr = window.devicePixelRatio || 1;
    const W = canvas.clientWidth, H = canvas.clientHeight;
    if (canvas.width !== Math.round(W * dpr) || canvas.height !== Math.round(H * dpr)) {
      canvas.width = Math.round(W * dpr);
      canvas.height = Math.round(H * dpr);
    }
    const ctx = canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    ctx.font = "600 11.5px system-ui, sans-serif";
    ctx.fillStyle = "#1d2330";
    const unit = canvas.dataset.unit;
    ctx.fillText(canvas.dataset.title + (unit ? ` [${unit}]` : ""), 4, 12);
    const hasData = lines.some((l) => l.rows.length);
    canvas.dataset.points = hasData ? String(lines[0].rows.length) : "0";
    if (!hasData) {
      ctx.fillStyle = "#9aa3b2";
      ctx.font = "12px system-ui, sans-serif";
      ctx.textAlign = "center";
      ctx.fillText("no data", W / 2, H / 2 + 6);
      ctx.textAlign = "left";
      return;
    }
    let lo = Infinity, hi = -Infinity, t0 = Infinity;
    for (const line of lines) {
      for (const row of line.rows) {
        const v = row[line.col];
        if (typeof v === "number") { if (v < lo) lo = v; if (v > hi) hi = v; }
        if (row[0] < t0) t0 = row[0];
      }
    }
    if (!isFinite(lo)) { lo = -1; hi = 1; }
    if (hi - lo < 1e-12) { const m = Math.abs(hi) * 0.1 || 1; lo -= m; hi += m; }
    const padY = (hi - lo) * 0.06;
    lo -= padY; hi += padY;
    ctx.font = "10.5px system-ui, sans-serif";
    const yTicks = niceTicks(lo, hi, 4), yLabels = yTicks.map((v) => tickLabel(v, yTicks.step));
    const L = Math.max(30, ...yLabels.map((text) => ctx.measureText(text).width + 10));
    const R = 6, T = 20, B = 18, pw = W - L - R, ph = H - T - B;
    const ta = Math.min(0, t0), tb = Math.max(tEnd, ta + 1e-3);
    const X = (t) => L + ((t - ta) / (tb - ta)) * pw, Y = (v) => T + (1 - (v - lo) / (hi - lo)) * ph;
    ctx.font = "10.5px system-ui, sans-serif";
    ctx.strokeStyle = "#eef1f5";
    ctx.fillStyle = "#6b7485";
    ctx.lineWidth = 1;
    ctx.textAlign = "right";
    yTicks.forEach((v, i) => {
      ctx.beginPath(); ctx.moveTo(L, Y(v)); ctx.lineTo(L + pw, Y(v)); ctx.stroke();
      ctx.fillText(yLabels[i], L - 4, Y(v) + 3.5);
    });
    ctx.textAlign = "center";
    for (const t of niceTicks(ta, tb, 5)) ctx.fillText(`${formatNumber(t)} s`, X(t), H - 4);
    ctx.strokeStyle = "#c3cad5";
    ctx.strokeRect(L, T, pw, ph);
    lines.forEach((line, i) => {
      const rows = line.rows, stride = Math.max(1, Math.floor(rows.length / (pw * 2)));
      ctx.strokeStyle = COLORS[i % COLORS.length];
      ctx.lineWidth = 1.4;
      ctx.beginPath();
      let pen = false;
      for (let k = 0; k < rows.length; k += stride) {
        const v = rows[k][line.col];
        if (typeof v !== "number") { pen = false; continue; }
        if (pen) ctx.lineTo(X(rows[k][0]), Y(v)); else ctx.moveTo(X(rows[k][0]), Y(v));
        pen = true;
      }
      ctx.stroke();
    });
    ctx.textAlign = "left";
    let x = L + pw;
    for (let i = lines.length - 1; i >= 0; i--) {
      const label = lines[i].label;
      x -= ctx.measureText(label).width + 16;
      ctx.fillStyle = COLORS[i % COLORS.length];
      ctx.fillRect(x, 6, 9, 3);
      ctx.fillText(label, x + 12, 12);
    }
  }

  // ------------------------------------------------------------------------------------------
  // camera image: the server's annotated JPEG (live only), fetched when a new one is announced
  let cameraShown = null;
  function drawCamera() {
    const robots = Object.entries((S.header.scene && S.header.scene.robots) || {}).filter(([, r]) => r.camera);
    $("camera-panel").hidden = !robots.length;
    if (!robots.length) return;
    const img = $("camera-img"), note = $("camera-note");
    if (S.mode === "replay") {
      img.hidden = true;
      note.textContent = "Camera images are not in the mission log: the live view shows them (2 per second, with the markers found and the estimated board axes).";
      $("camera-info").textContent = "";
      return;
    }
    const [robot] = robots[0];
    const info = S.camera[robot];
    if (!info) { note.textContent = S.done ? "no image was shown" : "waiting for a camera image…"; return; }
    if (cameraShown === info.seq) return;
    cameraShown = info.seq;
    // the text describes the image on screen: both change when the image has loaded (the server
    // keeps the last few images by seq, so the one fetched is the one announced)
    img.onload = () => {
      img.hidden = false;
      img.dataset.seq = info.seq;
      img.dataset.markers = info.markers.join(",");
      img.dataset.axes = info.axes ? "1" : "0";
      window.orbitree.cameraShown = info;
      note.textContent = "";
      const seen = info.markers.length ? `markers ${info.markers.join(", ")}` : "no marker found";
      $("camera-info").textContent = `${robot} · t ${(+info.stamp).toFixed(2)} s · ${seen}${info.axes ? " · board axes: estimate" : ""}`;
    };
    img.src = `camera/${encodeURIComponent(robot)}.jpg?seq=${info.seq}`;
  }

  // ------------------------------------------------------------------------------------------
  // LVLH relative motion (orbit missions): along-track (V-bar) across, radial (R-bar) up, the
  // target at the origin, the same scale on both axes. /orbit/relative/<target> holds the target
  // in the servicer's LVLH; at these ranges the two LVLH frames are parallel to within
  // range/radius (~1e-5), so the servicer relative to the target, drawn here, is its negative.
  function drawLvlh() {
    const names = Object.keys(S.series).filter((n) => n.startsWith("lvlh:")).sort();
    $("lvlh-panel").hidden = !names.length;
    if (!names.length) return;
    const canvas = $("lvlh"), dpr = window.devicePixelRatio || 1;
    const W = canvas.clientWidth, H = canvas.clientHeight;
    if (canvas.width !== Math.round(W * dpr) || canvas.height !== Math.round(H * dpr)) {
      canvas.width = Math.round(W * dpr);
      canvas.height = Math.round(H * dpr);
    }
    const ctx = canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    let ext = 1e-3;
    for (const name of names) for (const row of S.series[name]) ext = Math.max(ext, Math.abs(row[1]), Math.abs(row[2]));
    const pad = 26, scale = (Math.min(W, H) / 2 - pad) / (ext * 1.1);
    const X = (y) => W / 2 - y * scale, Y = (x) => H / 2 + x * scale;  // the servicer: −(y, x)
    ctx.strokeStyle = "#d5dae2";
    ctx.lineWidth = 1;
    ctx.beginPath(); ctx.moveTo(pad, H / 2); ctx.lineTo(W - pad, H / 2); ctx.moveTo(W / 2, 8); ctx.lineTo(W / 2, H - 8); ctx.stroke();
    ctx.font = "10.5px system-ui, sans-serif";
    ctx.fillStyle = "#6b7485";
    ctx.textAlign = "right";
    ctx.fillText("V-bar y (along-track) →", W - 4, H / 2 - 5);
    ctx.textAlign = "left";
    ctx.fillText("↑ R-bar x (radial)", W / 2 + 5, 16);
    ctx.fillText(`half-width ${formatNumber(+(ext * 1.1).toPrecision(2))} m`, 4, H - 6);
    ctx.fillStyle = "#1d2330";
    ctx.fillRect(W / 2 - 4, H / 2 - 4, 8, 8);  // the target
    let points = 0;
    names.forEach((name, i) => {
      const rows = S.series[name];
      points += rows.length;
      ctx.strokeStyle = COLORS[i % COLORS.length];
      ctx.lineWidth = 1.6;
      ctx.beginPath();
      rows.forEach((row, k) => (k ? ctx.lineTo(X(row[2]), Y(row[1])) : ctx.moveTo(X(row[2]), Y(row[1]))));
      ctx.stroke();
      const last = rows[rows.length - 1];
      if (last) {
        ctx.fillStyle = COLORS[i % COLORS.length];
        ctx.beginPath(); ctx.arc(X(last[2]), Y(last[1]), 4, 0, 2 * Math.PI); ctx.fill();
      }
    });
    canvas.dataset.points = String(points);
    const last = S.series[names[0]][S.series[names[0]].length - 1];
    $("lvlh-info").textContent = last
      ? `servicer from ${names[0].slice(5)}: x ${formatNumber(-last[1])} y ${formatNumber(-last[2])} z ${formatNumber(-last[3])} m`
      : "";
  }

  // ------------------------------------------------------------------------------------------
  // timeline (SVG): a row per phase (RUNNING spans, coloured by how they ended), faults, events
  const timeline = $("timeline");
  function isFault(event) { return String(event.kind || "").startsWith("fault"); }

  function drawTimeline() {
    const width = timeline.clientWidth || 800;
    const rows = [...S.phases.map((id) => ({ label: S.nodes[id].name, id })), { label: "faults" }, { label: "events" }];
    const LABEL = 150, RH = 20, top = 4, height = top + rows.length * RH + 22;
    timeline.setAttribute("height", height);
    timeline.setAttribute("viewBox", `0 0 ${width} ${height}`);
    timeline.classList.toggle("seekable", S.mode === "replay");
    timeline.textContent = "";
    const tEnd = Math.max(S.mode === "replay" ? +S.control.t_end || 0 : 0, S.tick.t || 0, 1);
    const X = (t) => LABEL + (Math.max(0, t) / tEnd) * (width - LABEL - 10);
    const axisY = top + rows.length * RH;
    for (const t of niceTicks(0, tEnd, 8)) {
      el("line", { class: "grid", x1: X(t), x2: X(t), y1: top, y2: axisY }, timeline);
      el("text", { class: "axis", x: X(t), y: axisY + 14, "text-anchor": "middle" }, timeline).textContent = `${formatNumber(t)} s`;
    }
    rows.forEach((row, i) => {
      el("text", { class: "label", x: 4, y: top + i * RH + 14 }, timeline).textContent = shorten(row.label, 22);
    });
    // phases: spans from the status changes
    const rowOf = new Map(S.phases.map((id, i) => [id, i]));
    const open = new Map();
    const bar = (i, a, b, status, tip) => {
      const r = el("rect", { class: `bar ${status}`, x: X(a), y: top + i * RH + 4, width: Math.max(2, X(b) - X(a)), height: RH - 8, rx: 3 }, timeline);
      el("title", {}, r).textContent = tip;
    };
    for (const [, t, id, status] of S.changes) {
      if (!rowOf.has(id)) continue;
      if (status === "RUNNING") { if (!open.has(id)) open.set(id, t); continue; }
      const start = open.has(id) ? open.get(id) : t;
      open.delete(id);
      bar(rowOf.get(id), start, t, status, `${S.nodes[id].name}: ${formatNumber(start)}–${formatNumber(t)} s, ${status}`);
    }
    for (const [id, start] of open) bar(rowOf.get(id), start, S.tick.t, "RUNNING", `${S.nodes[id].name}: running since ${formatNumber(start)} s`);
    // faults (a bar from a "fault" event's phase "start" to its "end", by id) and other events
    const faultRow = S.phases.length, eventRow = faultRow + 1;
    const fy = top + faultRow * RH + 4;
    const faultBar = (a, b, label, tip, ongoing) => {
      const r = el("rect", { class: "fault", x: X(a), y: fy, width: Math.max(3, X(b) - X(a)), height: RH - 8, rx: 2, opacity: ongoing ? 0.55 : 1 }, timeline);
      el("title", {}, r).textContent = tip;
    };
    const faultsOpen = new Map();
    const shown = S.events.length > 2000 ? S.events.slice(-2000) : S.events;
    for (const ev of shown) {
      const t = +ev.t || 0;
      const what = ev.fault || ev.message || ev.reason || "";
      const tip = `${formatNumber(t)} s  ${ev.kind}  ${what}`;
      if (isFault(ev)) {
        const span = +(ev.for ?? ev.duration ?? 0);
        if (ev.phase === "start" && ev.id !== undefined) faultsOpen.set(ev.id, ev);
        else if (ev.phase === "end" && faultsOpen.has(ev.id)) {
          const begin = faultsOpen.get(ev.id);
          faultsOpen.delete(ev.id);
          faultBar(+begin.t, t, what, `${what}: ${formatNumber(+begin.t)}–${formatNumber(t)} s`, false);
        } else if (span > 0) faultBar(t, t + span, what, tip, false);
        else {
          const shape = el("path", { class: "fault", d: `M${X(t)},${fy} l5,6 l-5,6 l-5,-6 z` }, timeline);
          el("title", {}, shape).textContent = tip;
        }
      } else {
        const kind = ["log", "safety_violation", "halt"].includes(ev.kind) ? ev.kind : "other";
        const r = el("rect", { class: `ev-${kind}`, x: X(t) - 1, y: top + eventRow * RH + 3, width: 3, height: RH - 6 }, timeline);
        el("title", {}, r).textContent = tip;
      }
    }
    for (const ev of faultsOpen.values()) {
      faultBar(+ev.t, S.tick.t, ev.fault, `${ev.fault}: active since ${formatNumber(+ev.t)} s`, true);
    }
    el("line", { class: "cursor", x1: X(S.tick.t), x2: X(S.tick.t), y1: top, y2: axisY }, timeline);
    timeline.onclick = S.mode !== "replay" ? null : (e) => {
      const box = timeline.getBoundingClientRect();
      const x = ((e.clientX - box.left) / box.width) * width;
      if (x < LABEL) return;
      send({ action: "seek", t: ((x - LABEL) / (width - LABEL - 10)) * tEnd });
    };
  }

  connect();
})();
