/**
 * The physics of 3DBall: a ball on top of a cube that the agent tilts, for many agents at once.
 *
 * Unity's scene: the agent is a cube of scale 5 (a 5 x 5 x 5 box collider) standing still, the
 * ball a sphere of radius 0.5 x scale with a rigid body (mass 1, no drag, angular drag 0.01).
 * The agent tilts its cube by setting its rotation (Transform.Rotate): the cube is not a
 * simulated body, so it never yields to the ball; the ball rolls on its top face, rolls over an
 * edge and falls. Everything is in the frame of the cube's centre (which never moves), with
 * Unity's axes: y up, gravity along -y.
 *
 * One fixed step (semi-implicit Euler, as PhysX integrates):
 *   1. gravity changes the velocity, angular drag slows the spin;
 *   2. the velocity moves the ball;
 *   3. contact with the box: the nearest point of the box to the ball's centre gives the normal
 *      (the top face, an edge or a corner alike); a ball that overlaps is put back on the surface;
 *      the normal impulse stops it going into the box (no bounce: Unity's default bounciness
 *      0), or pushes it out as fast as a tilting face comes at it; Coulomb friction at the
 *      contact point makes it roll, which is why it runs down a slope at 5/7 g sin(angle), as a
 *      solid sphere does, and not at g sin(angle) as a sliding block would.
 *
 * The state of all agents lives in Float64Array columns, one entry per agent, so that one step
 * of the whole world is a tight loop over plain numbers.
 */

/** Half the side of the agent's cube (scale 5, box collider of size 1). */
export const PLATFORM_HALF_SIZE = 2.5;
/** Radius of the ball at scale 1 (Unity's sphere collider, radius 0.5). */
export const BALL_RADIUS = 0.5;
/** Gravity along -y, m/s², as Unity's default Physics.gravity. */
export const DEFAULT_GRAVITY = 9.81;
/** The ball's Rigidbody.angularDrag in the 3DBall prefab: what slows a rolling ball down. */
export const BALL_ANGULAR_DRAG = 0.01;
/** Coulomb friction between ball and cube (Unity's default friction, 0.6). */
export const FRICTION = 0.6;
/** Unity's default Rigidbody.maxAngularVelocity, rad/s. */
export const MAX_ANGULAR_SPEED = 7;

/** A solid sphere: I = 2/5 m r². A contact impulse J at the rim changes the spin by 5/(2 r²) (r x J/m). */
const SPIN_PER_RIM_IMPULSE = 5 / 2;
/** Removing a slip s at the rim of a solid sphere takes a velocity change of -2/7 s at its centre. */
const ROLLING_SLIP_SHARE = 2 / 7;
const DEGREES_TO_RADIANS = Math.PI / 180;

export class Ball3DWorld {
  readonly count: number;
  /** Gravity's magnitude (along -y), m/s²; shared by the whole world as Unity's Physics.gravity. */
  gravity = DEFAULT_GRAVITY;

  // The cube's rotation (Unity's transform.rotation, a unit quaternion w, x, y, z).
  readonly rotW: Float64Array;
  readonly rotX: Float64Array;
  readonly rotY: Float64Array;
  readonly rotZ: Float64Array;
  // The rotation at the end of the last world step: what the agent turned since tells how fast
  // the faces move during this step.
  private readonly lastW: Float64Array;
  /** Scratch for one cube's rotation matrix. */
  private readonly rotation = new Float64Array(9);
  private readonly lastX: Float64Array;
  private readonly lastY: Float64Array;
  private readonly lastZ: Float64Array;

  // The ball's centre relative to the cube's centre, its velocity and its spin (world axes).
  readonly posX: Float64Array;
  readonly posY: Float64Array;
  readonly posZ: Float64Array;
  readonly velX: Float64Array;
  readonly velY: Float64Array;
  readonly velZ: Float64Array;
  readonly spinX: Float64Array;
  readonly spinY: Float64Array;
  readonly spinZ: Float64Array;
  /** The ball's radius (0.5 x its scale). */
  readonly radius: Float64Array;
  /**
   * The ball's mass. Kept because Unity's agent sets it, but it changes nothing here: the cube
   * never yields, so every impulse on the ball is proportional to its mass.
   */
  readonly mass: Float64Array;

  constructor(count: number) {
    this.count = count;
    const column = () => new Float64Array(count);
    this.rotW = column().fill(1);
    this.rotX = column();
    this.rotY = column();
    this.rotZ = column();
    this.lastW = column().fill(1);
    this.lastX = column();
    this.lastY = column();
    this.lastZ = column();
    this.posX = column();
    this.posY = column();
    this.posZ = column();
    this.velX = column();
    this.velY = column();
    this.velZ = column();
    this.spinX = column();
    this.spinY = column();
    this.spinZ = column();
    this.radius = column().fill(BALL_RADIUS);
    this.mass = column().fill(1);
  }

  /** Sets the cube upright, then turns it about its own x axis, then about its own z axis (degrees). */
  setTilt(i: number, degreesAboutX: number, degreesAboutZ: number): void {
    this.rotW[i] = 1;
    this.rotX[i] = 0;
    this.rotY[i] = 0;
    this.rotZ[i] = 0;
    this.rotateAboutLocalX(i, degreesAboutX);
    this.rotateAboutLocalZ(i, degreesAboutZ);
    // A new pose is not a motion: the faces do not sweep the ball at the next step.
    this.lastW[i] = this.rotW[i];
    this.lastX[i] = this.rotX[i];
    this.lastY[i] = this.rotY[i];
    this.lastZ[i] = this.rotZ[i];
  }

  /** Puts the ball at rest at (x, y, z) from the cube's centre; its spin is left as it was, as Unity leaves it. */
  placeBall(i: number, x: number, y: number, z: number): void {
    this.posX[i] = x;
    this.posY[i] = y;
    this.posZ[i] = z;
    this.velX[i] = 0;
    this.velY[i] = 0;
    this.velZ[i] = 0;
  }

  /** Turns the cube about its own x axis (Transform.Rotate(Vector3.right, degrees) in local space). */
  rotateAboutLocalX(i: number, degrees: number): void {
    this.rotateAboutLocalAxis(i, 'x', degrees);
  }

  /** Turns the cube about its own z axis (Transform.Rotate(Vector3.forward, degrees) in local space). */
  rotateAboutLocalZ(i: number, degrees: number): void {
    this.rotateAboutLocalAxis(i, 'z', degrees);
  }

  private rotateAboutLocalAxis(i: number, axis: 'x' | 'z', degrees: number): void {
    const half = 0.5 * degrees * DEGREES_TO_RADIANS;
    const c = Math.cos(half);
    const s = Math.sin(half);
    const w = this.rotW[i];
    const x = this.rotX[i];
    const y = this.rotY[i];
    const z = this.rotZ[i];
    // q * (cos, sin * axis): a turn about the body's own axis multiplies on the right.
    if (axis === 'x') {
      this.setRotation(i, w * c - x * s, w * s + x * c, y * c + z * s, z * c - y * s);
    } else {
      this.setRotation(i, w * c - z * s, x * c + y * s, y * c - x * s, w * s + z * c);
    }
  }

  /** Normalized, so that thousands of small turns do not let the quaternion drift off unit length. */
  private setRotation(i: number, w: number, x: number, y: number, z: number): void {
    const scale = 1 / Math.sqrt(w * w + x * x + y * y + z * z);
    this.rotW[i] = w * scale;
    this.rotX[i] = x * scale;
    this.rotY[i] = y * scale;
    this.rotZ[i] = z * scale;
  }

  /** Advances every ball by one fixed step of `dt` seconds. */
  step(dt: number): void {
    const gravityStep = this.gravity * dt;
    const spinKept = Math.max(0, 1 - BALL_ANGULAR_DRAG * dt);
    const h = PLATFORM_HALF_SIZE;
    const { rotW, rotX, rotY, rotZ, lastW, lastX, lastY, lastZ } = this;
    const { posX, posY, posZ, velX, velY, velZ, spinX, spinY, spinZ, radius } = this;
    for (let i = 0; i < this.count; i++) {
      const qw = rotW[i];
      const qx = rotX[i];
      const qy = rotY[i];
      const qz = rotZ[i];

      // 1-2. Gravity, spin decay, and the move.
      let vx = velX[i];
      let vy = velY[i] - gravityStep;
      let vz = velZ[i];
      let wx = spinX[i] * spinKept;
      let wy = spinY[i] * spinKept;
      let wz = spinZ[i] * spinKept;
      let px = posX[i] + vx * dt;
      let py = posY[i] + vy * dt;
      let pz = posZ[i] + vz * dt;

      // 3. Contact, in the cube's own frame: local = R^T world.
      const m = rotationMatrix(qx, qy, qz, qw, this.rotation);
      const r00 = m[0], r01 = m[1], r02 = m[2], r10 = m[3], r11 = m[4], r12 = m[5], r20 = m[6], r21 = m[7], r22 = m[8];
      const lx = r00 * px + r10 * py + r20 * pz;
      const ly = r01 * px + r11 * py + r21 * pz;
      const lz = r02 * px + r12 * py + r22 * pz;
      const cx = lx < -h ? -h : lx > h ? h : lx;
      const cy = ly < -h ? -h : ly > h ? h : ly;
      const cz = lz < -h ? -h : lz > h ? h : lz;
      let dx = lx - cx;
      let dy = ly - cy;
      let dz = lz - cz;
      const distanceSquared = dx * dx + dy * dy + dz * dz;
      const r = radius[i];

      if (distanceSquared < r * r) {
        let depth: number;
        if (distanceSquared > 1e-18) {
          const distance = Math.sqrt(distanceSquared);
          dx /= distance;
          dy /= distance;
          dz /= distance;
          depth = r - distance;
        } else {
          // The centre is inside the box (only a very fast turn could do it): out by the nearest face.
          const gapX = h - Math.abs(lx);
          const gapY = h - Math.abs(ly);
          const gapZ = h - Math.abs(lz);
          dx = dy = dz = 0;
          if (gapY <= gapX && gapY <= gapZ) {
            dy = ly < 0 ? -1 : 1;
            depth = r + gapY;
          } else if (gapX <= gapZ) {
            dx = lx < 0 ? -1 : 1;
            depth = r + gapX;
          } else {
            dz = lz < 0 ? -1 : 1;
            depth = r + gapZ;
          }
        }
        // The contact normal in world axes.
        const nx = r00 * dx + r01 * dy + r02 * dz;
        const ny = r10 * dx + r11 * dy + r12 * dz;
        const nz = r20 * dx + r21 * dy + r22 * dz;
        px += nx * depth;
        py += ny * depth;
        pz += nz * depth;

        // How fast the face comes at the ball: the cube's turn since the last step, as an angular
        // velocity (small angle: twice the vector part of the turn q * conj(last), per second),
        // at the contact point.
        let turnX = -qw * lastX[i] + qx * lastW[i] - qy * lastZ[i] + qz * lastY[i];
        let turnY = -qw * lastY[i] + qx * lastZ[i] + qy * lastW[i] - qz * lastX[i];
        let turnZ = -qw * lastZ[i] - qx * lastY[i] + qy * lastX[i] + qz * lastW[i];
        const turnW = qw * lastW[i] + qx * lastX[i] + qy * lastY[i] + qz * lastZ[i];
        const toRate = (turnW < 0 ? -2 : 2) / dt;
        turnX *= toRate;
        turnY *= toRate;
        turnZ *= toRate;
        const contactX = px - r * nx;
        const contactY = py - r * ny;
        const contactZ = pz - r * nz;
        const faceSpeed =
          (turnY * contactZ - turnZ * contactY) * nx +
          (turnZ * contactX - turnX * contactZ) * ny +
          (turnX * contactY - turnY * contactX) * nz;

        const normalSpeed = vx * nx + vy * ny + vz * nz;
        if (normalSpeed < faceSpeed) {
          const normalImpulse = faceSpeed - normalSpeed;
          vx += normalImpulse * nx;
          vy += normalImpulse * ny;
          vz += normalImpulse * nz;

          // Slip of the ball's rim on the face: v + w x (-r n), tangential part. The face is set,
          // not driven, so it drags nothing along (as a Unity collider moved by its transform).
          const rimX = -r * nx;
          const rimY = -r * ny;
          const rimZ = -r * nz;
          let slipX = vx + (wy * rimZ - wz * rimY);
          let slipY = vy + (wz * rimX - wx * rimZ);
          let slipZ = vz + (wx * rimY - wy * rimX);
          const slipNormal = slipX * nx + slipY * ny + slipZ * nz;
          slipX -= slipNormal * nx;
          slipY -= slipNormal * ny;
          slipZ -= slipNormal * nz;
          let frictionX = -ROLLING_SLIP_SHARE * slipX;
          let frictionY = -ROLLING_SLIP_SHARE * slipY;
          let frictionZ = -ROLLING_SLIP_SHARE * slipZ;
          const friction = Math.sqrt(frictionX * frictionX + frictionY * frictionY + frictionZ * frictionZ);
          const limit = FRICTION * normalImpulse;
          if (friction > limit) {
            const share = limit / friction;
            frictionX *= share;
            frictionY *= share;
            frictionZ *= share;
          }
          vx += frictionX;
          vy += frictionY;
          vz += frictionZ;
          const spinGain = SPIN_PER_RIM_IMPULSE / (r * r);
          wx += spinGain * (rimY * frictionZ - rimZ * frictionY);
          wy += spinGain * (rimZ * frictionX - rimX * frictionZ);
          wz += spinGain * (rimX * frictionY - rimY * frictionX);
        }
      }

      const spinSquared = wx * wx + wy * wy + wz * wz;
      if (spinSquared > MAX_ANGULAR_SPEED * MAX_ANGULAR_SPEED) {
        const share = MAX_ANGULAR_SPEED / Math.sqrt(spinSquared);
        wx *= share;
        wy *= share;
        wz *= share;
      }
      posX[i] = px;
      posY[i] = py;
      posZ[i] = pz;
      velX[i] = vx;
      velY[i] = vy;
      velZ[i] = vz;
      spinX[i] = wx;
      spinY[i] = wy;
      spinZ[i] = wz;
      lastW[i] = qw;
      lastX[i] = qx;
      lastY[i] = qy;
      lastZ[i] = qz;
    }
  }
}

/** The rotation matrix of a unit quaternion, row-major, written into `out` (which it returns). */
export function rotationMatrix(qx: number, qy: number, qz: number, qw: number, out: Float64Array): Float64Array {
  out[0] = 1 - 2 * (qy * qy + qz * qz);
  out[1] = 2 * (qx * qy - qw * qz);
  out[2] = 2 * (qx * qz + qw * qy);
  out[3] = 2 * (qx * qy + qw * qz);
  out[4] = 1 - 2 * (qx * qx + qz * qz);
  out[5] = 2 * (qy * qz - qw * qx);
  out[6] = 2 * (qx * qz - qw * qy);
  out[7] = 2 * (qy * qz + qw * qx);
  out[8] = 1 - 2 * (qx * qx + qy * qy);
  return out;
}
