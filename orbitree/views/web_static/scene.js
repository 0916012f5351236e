// orbitree web view: the 3-D scene (arms, tools, camera frusta, targets, estimates, contact
// forces) drawn with three.js, vendored in vendor/three/ (no CDN). The static scene comes in the
// log header's "scene", the moving parts in the messages' "scene" (see orbitree/runtime/scene.py);
// app.js receives the messages and hands them over with the events "orbitree:init" and
// "orbitree:update". World frame: z up (the robots' base frame).
import * as THREE from "three";
import { OrbitControls } from "./vendor/three/OrbitControls.js";

const $ = (id) => document.getElementById(id);
const panel = $("scene-panel"), holder = $("scene"), followSel = $("scene-follow");
const api = (window.orbitree = window.orbitree || {});
const hook = (api.scene = { ready: false, frames: 0, objects: 0, q: {}, shownQ: {}, tcp: {}, bodies: {}, est: {},
  force: {}, settled: true, follow: "", error: null });

const FORCE_M_PER_N = 0.004;  // arrow length: 100 N -> 0.4 m
const FRUSTUM_M = 0.25;       // depth of the drawn camera frustum
const MIN_FRAME_MS = 1000 / 30;  // at most 30 frames a second: smooth, and light on a CPU renderer

let renderer;
try {
  renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
} catch (err) {  // no WebGL: say so in the panel, keep the rest of the page working
  hook.error = String(err);
  holder.textContent = "3-D scene unavailable: this browser gives no WebGL context.";
}

// ------------------------------------------------------------------------------------------
// maths
function mat4(pose) {  // [x, y, z, qx, qy, qz, qw] -> Matrix4
  const m = new THREE.Matrix4();
  m.compose(new THREE.Vector3(pose[0], pose[1], pose[2]),
    new THREE.Quaternion(pose[3], pose[4], pose[5], pose[6]), new THREE.Vector3(1, 1, 1));
  return m;
}

function setPose(object, pose) {
  object.position.set(pose[0], pose[1], pose[2]);
  object.quaternion.set(pose[3], pose[4], pose[5], pose[6]);
}

function dhLink(d, theta, a, alpha) {  // Rz(theta) Tz(d) Tx(a) Rx(alpha), as skills/kinematics.py
  const ct = Math.cos(theta), st = Math.sin(theta), ca = Math.cos(alpha), sa = Math.sin(alpha);
  return new THREE.Matrix4().set(
    ct, -st * ca, st * sa, a * ct,
    st, ct * ca, -ct * sa, a * st,
    0, sa, ca, d,
    0, 0, 0, 1);
}

function linkFrames(dh, q) {  // frames 0..n in the robot base frame
  const frames = [new THREE.Matrix4()];
  for (let i = 0; i < dh.d.length; i++) {
    frames.push(frames[i].clone().multiply(dhLink(dh.d[i], q[i] + dh.theta_offset[i], dh.a[i], dh.alpha[i])));
  }
  return frames;
}

// ------------------------------------------------------------------------------------------
// parts (orbitree/runtime/scene.py's list of simple shapes)
const materials = new Map();
function material(color, ghost) {
  const key = `${color}|${ghost ? 1 : 0}`;
  if (!materials.has(key)) {
    materials.set(key, ghost
      ? new THREE.MeshBasicMaterial({ color: color || "#2f6fd6", wireframe: true, transparent: true, opacity: 0.7 })
      : new THREE.MeshStandardMaterial({ color: color || "#8a94a3", roughness: 0.65, metalness: 0.15, side: THREE.DoubleSide }));
  }
  return materials.get(key);
}

function partObject(part, ghost, ghostColor) {
  const mat = material(ghost ? ghostColor : part.color, ghost);
  let object;
  if (part.shape === "box") {
    object = new THREE.Mesh(new THREE.BoxGeometry(...part.size), mat);
  } else if (part.shape === "cylinder" || part.shape === "prism") {
    const [z0, z1] = part.z;
    let geometry;
    if (part.shape === "cylinder") {
      geometry = new THREE.CylinderGeometry(part.radius, part.radius, z1 - z0, 28);
      geometry.rotateX(Math.PI / 2);  // three's cylinders stand along y; ours along z
      geometry.translate(0, 0, (z0 + z1) / 2);
    } else {
      const shape = new THREE.Shape(part.outline.map(([x, y]) => new THREE.Vector2(x, y)));
      geometry = new THREE.ExtrudeGeometry(shape, { depth: z1 - z0, bevelEnabled: false });
      geometry.translate(0, 0, z0);
    }
    object = new THREE.Mesh(geometry, mat);
  } else if (part.shape === "sphere") {
    object = new THREE.Mesh(new THREE.SphereGeometry(part.radius, 24, 16), mat);
  } else if (part.shape === "polygon") {
    if (ghost) return null;
    const p = part.points, positions = [];
    for (let i = 1; i + 1 < p.length; i++) positions.push(...p[0], ...p[i], ...p[i + 1]);
    const geometry = new THREE.BufferGeometry();
    geometry.setAttribute("position", new THREE.Float32BufferAttribute(positions, 3));
    geometry.computeVertexNormals();
    object = new THREE.Mesh(geometry, new THREE.MeshBasicMaterial({ color: part.color, side: THREE.DoubleSide }));
    return object;
  } else if (part.shape === "axes") {
    object = new THREE.AxesHelper(part.size);
  } else {
    return null;  // a shape this page does not know: skipped, the rest is drawn
  }
  if (part.pose) setPose(object, part.pose);
  return object;
}

function bodyGroup(parts, ghost, ghostColor) {
  const group = new THREE.Group();
  for (const part of parts || []) {
    const object = partObject(part, ghost, ghostColor);
    if (object) group.add(object);
  }
  return group;
}

// ------------------------------------------------------------------------------------------
// the scene
let scene, camera, controls, world = null;
const robots = new Map(), bodies = new Map(), estimates = new Map();
const tweens = new Map();  // name -> {from, to, start, duration, apply}
let lastSampleAt = 0, sampleInterval = 0.05, needsRender = true;

function setup() {
  scene = new THREE.Scene();
  scene.background = new THREE.Color("#eef1f5");
  camera = new THREE.PerspectiveCamera(45, 1, 0.01, 200);
  camera.up.set(0, 0, 1);
  holder.appendChild(renderer.domElement);
  controls = new OrbitControls(camera, renderer.domElement);  // orbit (left), pan (right), zoom (wheel)
  controls.enableDamping = false;
  controls.addEventListener("change", () => { needsRender = true; });
  scene.add(new THREE.HemisphereLight("#ffffff", "#8d8474", 1.6));
  const sun = new THREE.DirectionalLight("#ffffff", 1.6);
  sun.position.set(2, -3, 5);
  scene.add(sun);
  const grid = new THREE.GridHelper(4, 20, "#b8bfca", "#d5dae2");
  grid.rotateX(Math.PI / 2);  // the floor of the world: z = 0
  scene.add(grid);
  scene.add(new THREE.AxesHelper(0.25));
  new ResizeObserver(resize).observe(holder);
  resize();
  requestAnimationFrame(loop);
}

function resize() {
  const w = holder.clientWidth || 600, h = holder.clientHeight || 400;
  renderer.setPixelRatio(Math.min(window.devicePixelRatio || 1, 2));
  renderer.setSize(w, h, false);
  camera.aspect = w / h;
  camera.updateProjectionMatrix();
  needsRender = true;
}

function clearWorld() {
  if (!world) return;
  scene.remove(world);
  world = null;
  robots.clear(); bodies.clear(); estimates.clear(); tweens.clear();
}

function build(header) {
  clearWorld();
  const desc = header && header.scene;
  panel.hidden = !desc;
  if (!desc) return;
  world = new THREE.Group();
  scene.add(world);
  for (const [name, spec] of Object.entries(desc.robots || {})) {
    const root = new THREE.Group();
    setPose(root, spec.base);
    world.add(root);
    const linkMat = material("#5b7fb5"), jointMat = material("#34455f");
    const links = [], joints = [];
    for (let i = 0; i < spec.dh.d.length; i++) {
      const link = new THREE.Mesh(new THREE.CylinderGeometry(0.045, 0.045, 1, 20), linkMat);
      const joint = new THREE.Mesh(new THREE.CylinderGeometry(0.062, 0.062, 0.15, 24), jointMat);
      joint.geometry.rotateX(Math.PI / 2);
      root.add(link, joint);
      links.push(link); joints.push(joint);
    }
    const flange = new THREE.Group();
    flange.matrixAutoUpdate = false;
    root.add(flange);
    flange.add(bodyGroup(spec.parts));
    let cam = null;
    if (spec.camera) {
      cam = new THREE.Group();
      cam.matrixAutoUpdate = false;
      root.add(cam);
      cam.add(new THREE.Mesh(new THREE.BoxGeometry(0.05, 0.035, 0.04), material("#2b3340")));
      cam.add(frustum(spec.camera));
    }
    const arrow = new THREE.ArrowHelper(new THREE.Vector3(0, 0, 1), new THREE.Vector3(), 0.1, "#d63b3b", 0.05, 0.03);
    arrow.visible = false;
    world.add(arrow);
    const robot = { name, spec, root, links, joints, flange, cam, arrow, q: spec.q0.slice(), tool: mat4(spec.tool),
      mount: spec.camera ? mat4(spec.camera.mount) : null, force: null };
    robots.set(name, robot);
    poseRobot(robot, robot.q);
  }
  for (const body of desc.bodies || []) {
    const group = bodyGroup(body.parts);
    group.name = body.name;
    setPose(group, body.pose);
    group.userData.pose = body.pose;
    world.add(group);
    bodies.set(body.name, group);
    if (body.kind === "target") {
      const ghost = bodyGroup(body.parts, true, "#2f6fd6");
      ghost.add(new THREE.AxesHelper(0.08));
      ghost.visible = false;
      world.add(ghost);
      estimates.set(body.name, ghost);
    }
  }
  const names = [...robots.keys()];
  followSel.textContent = "";
  followSel.add(new Option("free camera", ""));
  for (const name of names) followSel.add(new Option(`follow ${name}`, name));
  followSel.value = hook.follow && robots.has(hook.follow) ? hook.follow : "";
  frame(desc);
  hook.objects = countObjects();
  hook.ready = true;
  needsRender = true;
}

function frustum(spec) {
  const k = spec.k || [900, 0, spec.width / 2, 0, 900, spec.height / 2, 0, 0, 1];
  const corner = (u, v) => new THREE.Vector3((u - k[2]) / k[0] * FRUSTUM_M, (v - k[5]) / k[4] * FRUSTUM_M, FRUSTUM_M);
  const c = [corner(0, 0), corner(spec.width, 0), corner(spec.width, spec.height), corner(0, spec.height)];
  const o = new THREE.Vector3();
  const points = [o, c[0], o, c[1], o, c[2], o, c[3], c[0], c[1], c[1], c[2], c[2], c[3], c[3], c[0]];
  return new THREE.LineSegments(new THREE.BufferGeometry().setFromPoints(points),
    new THREE.LineBasicMaterial({ color: "#16a3b8" }));
}

function frame(desc) {  // look at the robots and the targets together
  const box = new THREE.Box3();
  for (const r of robots.values()) box.expandByPoint(new THREE.Vector3().setFromMatrixPosition(r.flange.matrixWorld));
  for (const r of robots.values()) box.expandByPoint(r.root.position);
  for (const b of desc.bodies || []) box.expandByPoint(new THREE.Vector3(b.pose[0], b.pose[1], b.pose[2]));
  if (box.isEmpty()) box.expandByPoint(new THREE.Vector3());
  const center = box.getCenter(new THREE.Vector3()), size = Math.max(box.getSize(new THREE.Vector3()).length(), 1);
  controls.target.copy(center);
  camera.position.copy(center).add(new THREE.Vector3(0.9, -1.5, 0.8).multiplyScalar(size * 0.9));
  controls.update();
}

function countObjects() {
  let count = 0;
  world.traverse((o) => { if (o.isMesh || o.isLine) count += 1; });
  return count;
}

const _a = new THREE.Vector3(), _b = new THREE.Vector3(), _up = new THREE.Vector3(0, 1, 0);
function poseRobot(robot, q) {
  const frames = linkFrames(robot.spec.dh, q);
  for (let i = 0; i < robot.links.length; i++) {
    _a.setFromMatrixPosition(frames[i]);
    _b.setFromMatrixPosition(frames[i + 1]);
    const length = _a.distanceTo(_b), link = robot.links[i];
    link.visible = length > 1e-3;
    if (link.visible) {
      link.position.copy(_a).add(_b).multiplyScalar(0.5);
      link.quaternion.setFromUnitVectors(_up, _b.clone().sub(_a).normalize());
      link.scale.set(1, length, 1);
    }
    const joint = robot.joints[i];  // joint i + 1 turns about z of frame i
    joint.position.setFromMatrixPosition(frames[i]);
    joint.quaternion.setFromRotationMatrix(frames[i]);
  }
  const flange = frames[frames.length - 1];
  robot.flange.matrix.copy(flange);
  robot.flange.matrixWorldNeedsUpdate = true;
  if (robot.cam) {
    robot.cam.matrix.copy(flange).multiply(robot.tool).multiply(robot.mount);
    robot.cam.matrixWorldNeedsUpdate = true;
  }
  robot.q = q;
  robot.root.updateMatrixWorld(true);
  const tcp = new THREE.Matrix4().copy(robot.root.matrixWorld).multiply(flange).multiply(robot.tool);
  const p = new THREE.Vector3().setFromMatrixPosition(tcp);
  hook.shownQ[robot.name] = q.slice();
  hook.tcp[robot.name] = [p.x, p.y, p.z];
  placeArrow(robot, p);
}

function placeArrow(robot, tcp) {
  const f = robot.force;
  const norm = f ? Math.hypot(f[0], f[1], f[2]) : 0;
  robot.arrow.visible = norm > 1.0;
  if (!robot.arrow.visible) return;
  robot.arrow.position.copy(tcp);
  robot.arrow.setDirection(new THREE.Vector3(f[0] / norm, f[1] / norm, f[2] / norm));
  const length = Math.max(0.03, norm * FORCE_M_PER_N);
  robot.arrow.setLength(length, Math.min(0.05, length * 0.3), Math.min(0.03, length * 0.2));
}

// ------------------------------------------------------------------------------------------
// samples: eased from what is shown to the newest over about one sample interval
function tween(key, from, to, apply, immediate) {
  const now = performance.now() / 1000;
  if (immediate || !from) { apply(to); tweens.delete(key); return; }
  tweens.set(key, { from: from.slice(), to, start: now, duration: Math.min(0.2, sampleInterval), apply });
}

function lerpPose(a, b, s) {
  const qa = new THREE.Quaternion(a[3], a[4], a[5], a[6]), qb = new THREE.Quaternion(b[3], b[4], b[5], b[6]);
  qa.slerp(qb, s);
  return [a[0] + (b[0] - a[0]) * s, a[1] + (b[1] - a[1]) * s, a[2] + (b[2] - a[2]) * s, qa.x, qa.y, qa.z, qa.w];
}

function applyScene(sample, immediate) {
  if (!world || !sample) return;
  const now = performance.now() / 1000;
  if (!immediate && lastSampleAt) sampleInterval = Math.min(0.25, Math.max(0.02, now - lastSampleAt));
  lastSampleAt = now;
  for (const [name, f] of Object.entries(sample.f || {})) {
    const robot = robots.get(name);
    if (robot) { robot.force = f; hook.force[name] = f; }
  }
  for (const [name, q] of Object.entries(sample.q || {})) {
    const robot = robots.get(name);
    if (!robot) continue;
    hook.q[name] = q.slice();
    tween(`q:${name}`, robot.q, q, (value) => poseRobot(robot, value), immediate);
  }
  for (const [name, pose] of Object.entries(sample.body || {})) {
    const body = bodies.get(name);
    if (!body) continue;
    hook.bodies[name] = pose;
    const shown = body.userData.pose;
    tween(`body:${name}`, shown, pose, (value) => { setPose(body, value); body.userData.pose = value; }, immediate);
  }
  for (const [name, pose] of Object.entries(sample.est || {})) {
    const ghost = estimates.get(name);
    if (!ghost) continue;
    hook.est[name] = pose;
    ghost.visible = true;
    setPose(ghost, pose);
  }
  for (const robot of robots.values()) {
    placeArrow(robot, new THREE.Vector3(...(hook.tcp[robot.name] || [0, 0, 0])));
    const latch = (sample.latch || {})[robot.name];
    if (latch) robot.latch = latch;
  }
  hook.settled = tweens.size === 0;
  needsRender = true;
}

let lastFrame = 0;
function loop(at) {
  requestAnimationFrame(loop);
  if (!world || at - lastFrame < MIN_FRAME_MS - 1) return;
  lastFrame = at;
  const now = performance.now() / 1000;
  for (const [key, tw] of tweens) {
    const s = Math.min(1, (now - tw.start) / tw.duration);
    const value = key.startsWith("body:") ? lerpPose(tw.from, tw.to, s) : tw.from.map((a, i) => a + (tw.to[i] - a) * s);
    tw.apply(s >= 1 ? tw.to : value);
    if (s >= 1) tweens.delete(key);
    needsRender = true;
  }
  hook.settled = tweens.size === 0;
  if (hook.follow && hook.tcp[hook.follow]) {  // keep the followed tool where the view centres
    const p = new THREE.Vector3(...hook.tcp[hook.follow]);
    const delta = p.sub(controls.target);
    if (delta.lengthSq() > 1e-12) {
      controls.target.add(delta);
      camera.position.add(delta);
      controls.update();
      needsRender = true;
    }
  }
  if (needsRender) {
    renderer.render(scene, camera);
    hook.frames += 1;
    needsRender = false;
  }
}

followSel.addEventListener("change", () => { hook.follow = followSel.value; needsRender = true; });

// ------------------------------------------------------------------------------------------
// wiring to app.js (which may have received the init before this module loaded)
let builtFrom = null;
function onInit(msg) {
  const desc = JSON.stringify((msg.header && msg.header.scene) || null);
  if (desc !== builtFrom) {  // a new run; a replay's seek sends the same scene again: keep the view
    build(msg.header);
    builtFrom = desc;
  }
  for (const ghost of estimates.values()) ghost.visible = false;
  hook.est = {};
  hook.force = {};
  for (const robot of robots.values()) robot.force = null;
  applyScene(msg.scene || {}, true);
}
if (renderer) {
  setup();
  window.addEventListener("orbitree:init", (e) => onInit(e.detail));
  window.addEventListener("orbitree:update", (e) => applyScene(e.detail.scene, false));
  const state = api.state;
  if (state && state.header) onInit({ header: state.header, scene: state.scene });
}
