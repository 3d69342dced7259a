/**
 * The top-down world of the built-ins whose agents walk and see with rays (Hallway, Pyramids):
 * axis-aligned boxes on the floor plane (x across, z along), a round walker that turns, pushes
 * and slides among them, and the sphere casts of Unity's RayPerceptionSensor, which seen from
 * above are circles swept along a line.
 */

// A walker's one discrete branch, in the numbering of upstream's Hallway and Pyramids agents.
export const NOTHING = 0;
export const FORWARD = 1;
export const BACKWARD = 2;
export const TURN_RIGHT = 3;
export const TURN_LEFT = 4;
export const WALK_ACTIONS = 5;

/** How a walker moves: its turn rate, the velocity change of a push, and what slows it down. */
export interface Gait {
  readonly turnDegreesPerSecond: number;
  /** m/s added along its facing at every step it pushes (ForceMode.VelocityChange). */
  readonly runSpeed: number;
  /** Friction's deceleration on the floor, m/s^2. */
  readonly frictionDeceleration: number;
  /** The Rigidbody's linear drag. */
  readonly drag: number;
}

/** A walker as the world sees it: where it is, its facing (degrees clockwise from +z) and velocity. */
export interface Walker {
  x: number;
  z: number;
  yaw: number;
  vx: number;
  vz: number;
}

/** An axis-aligned box seen from above. */
export interface Box {
  readonly minX: number;
  readonly maxX: number;
  readonly minZ: number;
  readonly maxZ: number;
}

export function boxAround(centerX: number, centerZ: number, sizeX: number, sizeZ: number): Box {
  return { minX: centerX - sizeX / 2, maxX: centerX + sizeX / 2, minZ: centerZ - sizeZ / 2, maxZ: centerZ + sizeZ / 2 };
}

/** The point of `box` nearest to (x, z) (the point itself when inside). */
export function nearestPoint(box: Box, x: number, z: number): { x: number; z: number } {
  return { x: Math.min(box.maxX, Math.max(box.minX, x)), z: Math.min(box.maxZ, Math.max(box.minZ, z)) };
}

/** Distance from (x, z) to the box, 0 inside it. */
export function distanceToBox(box: Box, x: number, z: number): number {
  const near = nearestPoint(box, x, z);
  return Math.hypot(x - near.x, z - near.z);
}

/**
 * Where a ray from (x, z) along the unit direction (dx, dz) enters the box, as a distance along
 * the ray; Infinity when it misses or the box lies behind. The start is taken to be outside.
 */
function rayEntersBox(x: number, z: number, dx: number, dz: number, box: Box): number {
  let near = -Infinity;
  let far = Infinity;
  for (const [origin, direction, low, high] of [
    [x, dx, box.minX, box.maxX],
    [z, dz, box.minZ, box.maxZ],
  ] as const) {
    if (Math.abs(direction) < 1e-12) {
      if (origin < low || origin > high) return Infinity;
      continue;
    }
    const a = (low - origin) / direction;
    const b = (high - origin) / direction;
    near = Math.max(near, Math.min(a, b));
    far = Math.min(far, Math.max(a, b));
  }
  return near <= far && near >= 0 ? near : Infinity;
}

/** Where a ray from (x, z) along the unit direction (dx, dz) enters a circle; Infinity if never. */
function rayEntersCircle(x: number, z: number, dx: number, dz: number, cx: number, cz: number, radius: number): number {
  const ox = x - cx;
  const oz = z - cz;
  const b = ox * dx + oz * dz;
  const c = ox * ox + oz * oz - radius * radius;
  const discriminant = b * b - c;
  if (discriminant < 0) return Infinity;
  const t = -b - Math.sqrt(discriminant);
  return t >= 0 ? t : Infinity;
}

/**
 * How far a circle of `radius` centered at (x, z) travels along the unit direction (dx, dz)
 * before it touches the box: Infinity when it never does. As a physics sphere cast, a box the
 * circle already overlaps at the start is not seen. The swept circle meets the box where the
 * center ray meets the box grown by the radius with rounded corners: two stretched boxes and
 * four corner circles.
 */
export function circleCast(x: number, z: number, dx: number, dz: number, radius: number, box: Box): number {
  if (distanceToBox(box, x, z) < radius - 1e-9) return Infinity;
  const wide = { minX: box.minX - radius, maxX: box.maxX + radius, minZ: box.minZ, maxZ: box.maxZ };
  const deep = { minX: box.minX, maxX: box.maxX, minZ: box.minZ - radius, maxZ: box.maxZ + radius };
  let best = Math.min(rayEntersBox(x, z, dx, dz, wide), rayEntersBox(x, z, dx, dz, deep));
  for (const cx of [box.minX, box.maxX]) {
    for (const cz of [box.minZ, box.maxZ]) best = Math.min(best, rayEntersCircle(x, z, dx, dz, cx, cz, radius));
  }
  return best;
}

/**
 * Pushes a circle out of a solid box it overlaps, and takes away the part of its velocity that
 * points into the box (a contact without bounce). Returns whether they were in contact.
 */
export function pushOut(
  body: { x: number; z: number; vx: number; vz: number },
  radius: number,
  box: Box,
): boolean {
  const near = nearestPoint(box, body.x, body.z);
  let nx = body.x - near.x;
  let nz = body.z - near.z;
  const distance = Math.hypot(nx, nz);
  if (distance >= radius) return false;
  let depth: number;
  if (distance > 1e-9) {
    nx /= distance;
    nz /= distance;
    depth = radius - distance;
  } else {
    // The center is inside the box: leave by the nearest side.
    const exits = [
      { nx: -1, nz: 0, depth: body.x - box.minX + radius },
      { nx: 1, nz: 0, depth: box.maxX - body.x + radius },
      { nx: 0, nz: -1, depth: body.z - box.minZ + radius },
      { nx: 0, nz: 1, depth: box.maxZ - body.z + radius },
    ];
    const exit = exits.reduce((a, b) => (b.depth < a.depth ? b : a));
    ({ nx, nz, depth } = exit);
  }
  body.x += nx * depth;
  body.z += nz * depth;
  const inward = body.vx * nx + body.vz * nz;
  if (inward < 0) {
    body.vx -= inward * nx;
    body.vz -= inward * nz;
  }
  return true;
}

/**
 * The angles of a RayPerceptionSensor's rays, in its output order: 90 (forward), then to the right
 * and to the left of it by one step, then by two, and so on (a step is maxRayDegrees / raysPerDirection).
 */
export function rayPerceptionAngles(raysPerDirection: number, maxRayDegrees: number): number[] {
  const delta = maxRayDegrees / raysPerDirection;
  const angles = [90];
  for (let i = 1; i <= raysPerDirection; i++) angles.push(90 - i * delta, 90 + i * delta);
  return angles;
}

/**
 * The world direction of a sensor angle for a body whose facing is `yaw` degrees clockwise from +z
 * (Unity's yaw seen from above): cos(angle) along the body's right, sin(angle) along its facing.
 */
export function rayDirection(yaw: number, angle: number): { dx: number; dz: number } {
  const a = (angle * Math.PI) / 180;
  const y = (yaw * Math.PI) / 180;
  const right = { x: Math.cos(y), z: -Math.sin(y) };
  const forward = { x: Math.sin(y), z: Math.cos(y) };
  return { dx: Math.cos(a) * right.x + Math.sin(a) * forward.x, dz: Math.cos(a) * right.z + Math.sin(a) * forward.z };
}

/** Something a ray can hit: a box and the index of its tag among the sensor's detectable tags. */
export interface TaggedBox {
  readonly box: Box;
  readonly tag: number;
}

/** What one ray saw: the tag it hit (null: nothing within its length) and the distance over its length. */
export interface RayHit {
  readonly tag: number | null;
  readonly fraction: number;
}

/** A sphere cast of `radius` from (x, z) along the unit direction: the nearest of `targets` within `length`. */
export function castRay(
  x: number,
  z: number,
  direction: { dx: number; dz: number },
  radius: number,
  length: number,
  targets: Iterable<TaggedBox>,
): RayHit {
  let nearest = Infinity;
  let tag: number | null = null;
  for (const target of targets) {
    const t = circleCast(x, z, direction.dx, direction.dz, radius, target.box);
    if (t < nearest) {
      nearest = t;
      tag = target.tag;
    }
  }
  if (nearest > length) return { tag: null, fraction: 1 };
  return { tag, fraction: nearest / length };
}

/**
 * Writes ray number `ray` as RayPerceptionSensor does: a one-hot of the tag it hit among `tagCount`
 * detectable tags, then 1 if it hit nothing, then the distance it travelled over its length.
 */
export function writeRay(out: Float32Array, ray: number, tagCount: number, hit: RayHit): void {
  const start = ray * (tagCount + 2);
  out.fill(0, start, start + tagCount);
  if (hit.tag !== null) out[start + hit.tag] = 1;
  out[start + tagCount] = hit.tag === null ? 1 : 0;
  out[start + tagCount + 1] = hit.fraction;
}

/**
 * A walker's step of `dt` seconds before anything stops it: it turns or pushes as `action` says,
 * then slows down (slowDown). Moving it is left to the caller.
 */
export function walk(walker: Walker, action: number, gait: Gait, dt: number): void {
  if (action === TURN_RIGHT) walker.yaw += gait.turnDegreesPerSecond * dt;
  else if (action === TURN_LEFT) walker.yaw -= gait.turnDegreesPerSecond * dt;
  walker.yaw = ((walker.yaw % 360) + 360) % 360;
  const push = action === FORWARD ? 1 : action === BACKWARD ? -1 : 0;
  if (push !== 0) {
    const yaw = (walker.yaw * Math.PI) / 180;
    walker.vx += push * gait.runSpeed * Math.sin(yaw);
    walker.vz += push * gait.runSpeed * Math.cos(yaw);
  }
  slowDown(walker, gait, dt);
}

/**
 * What slows a walker down over `dt` seconds, as a box on a floor: Coulomb friction (a constant
 * deceleration, never past a stop), then the Rigidbody's linear drag.
 */
export function slowDown(walker: Walker, gait: Gait, dt: number): void {
  const speed = Math.hypot(walker.vx, walker.vz);
  if (speed === 0) return;
  const slowed = Math.max(0, speed - gait.frictionDeceleration * dt) * Math.max(0, 1 - gait.drag * dt);
  walker.vx *= slowed / speed;
  walker.vz *= slowed / speed;
}

/**
 * A heuristic's decision to head for `aim`: turn until facing it within half of what a decision
 * of `decisionSeconds` turns, then push, but only while slow, so as never to slide far past it.
 */
export function steer(walker: Walker, aim: { x: number; z: number }, gait: Gait, decisionSeconds: number): number {
  const wanted = (Math.atan2(aim.x - walker.x, aim.z - walker.z) * 180) / Math.PI;
  const error = ((wanted - walker.yaw + 540) % 360) - 180;
  const halfTurn = (gait.turnDegreesPerSecond * decisionSeconds) / 2;
  if (error > halfTurn) return TURN_RIGHT;
  if (error < -halfTurn) return TURN_LEFT;
  return Math.hypot(walker.vx, walker.vz) < 4 ? FORWARD : NOTHING;
}
