/**
 * The camera of Visual3DBall: a small ray caster of our own that draws one agent's cube and ball
 * as the Visual3DBall prefab's camera frames them.
 *
 * Upstream's prefab puts the camera 7 above and 8 behind the cube's centre (the area's origin),
 * pitched 30 degrees down, a perspective camera with a vertical field of view of 60 degrees that
 * clears to black; its CameraSensor renders it at 84 x 84, RGB. So the camera looks along +z
 * and down, +x to the right of the image, and sees the cube's top face (where the ball rolls),
 * its near face (-z), the ball, and nothing else: the other areas stand 20 apart, out of view.
 *
 * Shading is flat: a base color times (ambient + diffuse x the cosine to the light), the light
 * coming from the scene's directional light. The cube has one shade per face, so its top face
 * changes brightness and outline as the agent tilts it; the ball is shaded per pixel.
 *
 * Speed: everything that depends only on the frame (the cube's rotation, the ball's position)
 * is worked out once; only the pixels inside the screen rectangle that holds the cube and the
 * ball are cast, the rest is background; the renderer allocates nothing per frame.
 */
import { Ball3DWorld, PLATFORM_HALF_SIZE, rotationMatrix } from './ball3d-physics';

/** The CameraSensor of upstream's Visual3DBall prefab: 84 x 84, RGB. */
export const CAMERA_WIDTH = 84;
export const CAMERA_HEIGHT = 84;
/** The prefab's camera, relative to the cube's centre: 7 up, 8 back (-z). */
export const CAMERA_POSITION: readonly [number, number, number] = [0, 7, -8];
/** Turned 30 degrees about x: looking down along +z. */
export const CAMERA_PITCH_DEGREES = 30;
/** Vertical field of view. */
export const CAMERA_FIELD_OF_VIEW_DEGREES = 60;

/**
 * Towards the light: the opposite of the forward axis of the scene's directional light, whose
 * rotation is the quaternion (x 0.31598538, y -0.3596048, z 0.13088542, w 0.8681629).
 */
export const TOWARDS_LIGHT: readonly [number, number, number] = lightFromRotation(0.31598538, -0.3596048, 0.13088542, 0.8681629);

// Module-scope copies of globals for the per-pixel loop: under node's vm contexts (jest) every
// global lookup goes through the context's interceptors and costs dearly.
const FAR = Infinity;
const sqrt = Math.sqrt;

const AMBIENT = 0.3;
const DIFFUSE = 0.7;

/**
 * Base colors in [0, 1] (our own): the background is the camera's clear color, black; the cube
 * is blue with a paler top face (its own +y face, wherever it turns), the ball orange.
 */
export const CAMERA_COLORS = {
  background: [0, 0, 0],
  cube: [0.12, 0.3, 0.8],
  top: [0.5, 0.68, 1],
  ball: [1, 0.62, 0.16],
} as const satisfies Record<string, readonly [number, number, number]>;

function lightFromRotation(x: number, y: number, z: number, w: number): [number, number, number] {
  // The light shines along its rotation applied to +z; the way back to it is the opposite.
  const forward: [number, number, number] = [2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y)];
  const length = Math.hypot(...forward);
  return [-forward[0] / length, -forward[1] / length, -forward[2] / length];
}

/** The shade of a surface whose outward normal is n (unit): ambient, plus diffuse light on its lit side. */
function shade(nx: number, ny: number, nz: number): number {
  const cosine = nx * TOWARDS_LIGHT[0] + ny * TOWARDS_LIGHT[1] + nz * TOWARDS_LIGHT[2];
  return AMBIENT + DIFFUSE * (cosine > 0 ? cosine : 0);
}

/**
 * Renders agents' views channel-first, [3, height, width] in [0, 1], into buffers the caller
 * owns. One renderer serves every agent of an environment.
 */
export class Ball3DCamera {
  readonly plane: number;
  // The camera's axes in the cube-centred world frame: right (+x), up and forward.
  private readonly upY: number;
  private readonly upZ: number;
  private readonly forwardY: number;
  private readonly forwardZ: number;
  /** Per column and per row: the image-plane offset of the pixel's centre, at unit depth. */
  private readonly columnOffset: Float64Array;
  private readonly rowOffset: Float64Array;
  /** Pixels per unit of image-plane offset, across and down. */
  private readonly pixelsPerUnitX: number;
  private readonly pixelsPerUnitY: number;
  // Per frame: the six face colors of the cube (-x, +x, -y, +y, -z, +z; r, g, b each), and the
  // screen rectangle to cast: colStart, colEnd, rowStart, rowEnd.
  private readonly faceColors = new Float64Array(18);
  /** Scratch for the cube's rotation matrix. */
  private readonly rotation = new Float64Array(9);
  private readonly bounds = new Int32Array(4);
  // The projected extent of what the rectangle must hold, gathered by see().
  private minU = 0;
  private maxU = 0;
  private minV = 0;
  private maxV = 0;
  private behind = false;

  constructor(
    readonly width: number = CAMERA_WIDTH,
    readonly height: number = CAMERA_HEIGHT,
  ) {
    if (!(Number.isInteger(width) && Number.isInteger(height) && width >= 1 && height >= 1)) {
      throw new Error(`Visual3DBall's camera needs a whole number of pixels a side, got ${width}x${height}.`);
    }
    this.plane = width * height;
    const pitch = (CAMERA_PITCH_DEGREES * Math.PI) / 180;
    this.forwardY = -Math.sin(pitch);
    this.forwardZ = Math.cos(pitch);
    this.upY = Math.cos(pitch);
    this.upZ = Math.sin(pitch);
    const halfHeight = Math.tan((CAMERA_FIELD_OF_VIEW_DEGREES * Math.PI) / 360);
    const halfWidth = halfHeight * (width / height);
    this.pixelsPerUnitX = width / (2 * halfWidth);
    this.pixelsPerUnitY = height / (2 * halfHeight);
    this.columnOffset = Float64Array.from({ length: width }, (_, col) => (col + 0.5 - width / 2) / this.pixelsPerUnitX);
    this.rowOffset = Float64Array.from({ length: height }, (_, row) => (height / 2 - (row + 0.5)) / this.pixelsPerUnitY);
  }

  /** Draws what agent `index` of `world` sees into `out` (3 x height x width floats). */
  render(world: Ball3DWorld, index: number, out: Float32Array): void {
    const { width, plane } = this;
    const h = PLATFORM_HALF_SIZE;
    const [cx, cy, cz] = CAMERA_POSITION;
    const { forwardY, forwardZ, upY, upZ } = this;

    // The cube's rotation as a matrix (its columns: the cube's own axes in the world).
    const qw = world.rotW[index];
    const qx = world.rotX[index];
    const qy = world.rotY[index];
    const qz = world.rotZ[index];
    const ballX = world.posX[index];
    const ballY = world.posY[index];
    const ballZ = world.posZ[index];
    const br = world.radius[index];
    const m = rotationMatrix(qx, qy, qz, qw, this.rotation);
    const r00 = m[0], r01 = m[1], r02 = m[2], r10 = m[3], r11 = m[4], r12 = m[5], r20 = m[6], r21 = m[7], r22 = m[8];

    // One color per face, flat: the face's outward normal is ± a column of the matrix.
    this.setFaceColors(0, r00, r10, r20);
    this.setFaceColors(1, r01, r11, r21);
    this.setFaceColors(2, r02, r12, r22);
    const faces = this.faceColors;

    // The camera in the cube's own frame (R^T c), and the camera's axes there: a pixel's ray in
    // the cube's frame is forward + u right + v up, all turned by R^T.
    const ox = r00 * cx + r10 * cy + r20 * cz;
    const oy = r01 * cx + r11 * cy + r21 * cz;
    const oz = r02 * cx + r12 * cy + r22 * cz;
    const fx = r10 * forwardY + r20 * forwardZ;
    const fy = r11 * forwardY + r21 * forwardZ;
    const fz = r12 * forwardY + r22 * forwardZ;
    const rx = r00;
    const ry = r01;
    const rz = r02;
    const ux = r10 * upY + r20 * upZ;
    const uy = r11 * upY + r21 * upZ;
    const uz = r12 * upY + r22 * upZ;

    // The ball, from the camera.
    const bx = cx - ballX;
    const by = cy - ballY;
    const bz = cz - ballZ;
    const ballC = bx * bx + by * by + bz * bz - br * br;
    const ball = CAMERA_COLORS.ball;

    // Background everywhere, then cast only the pixels that can show the cube or the ball.
    const background = CAMERA_COLORS.background;
    out.fill(background[0], 0, plane);
    out.fill(background[1], plane, 2 * plane);
    out.fill(background[2], 2 * plane, 3 * plane);
    if (!this.findBounds(r00, r01, r02, r10, r11, r12, r20, r21, r22, ballX, ballY, ballZ, br)) return;
    const colStart = this.bounds[0];
    const colEnd = this.bounds[1];
    const rowStart = this.bounds[2];
    const rowEnd = this.bounds[3];

    const columnOffset = this.columnOffset;
    for (let row = rowStart; row < rowEnd; row++) {
      const v = this.rowOffset[row];
      // World ray of this row: (u, forwardY + v upY, forwardZ + v upZ); its cube-frame parts too.
      const dy = forwardY + v * upY;
      const dz = forwardZ + v * upZ;
      const rowX = fx + v * ux;
      const rowY = fy + v * uy;
      const rowZ = fz + v * uz;
      let pixel = row * width + colStart;
      for (let col = colStart; col < colEnd; col++, pixel++) {
        const u = columnOffset[col];

        // The ball: |c + t d - p|² = r², the nearer root.
        const a = u * u + dy * dy + dz * dz;
        const b = bx * u + by * dy + bz * dz;
        const discriminant = b * b - a * ballC;
        let tBall = FAR;
        if (discriminant >= 0) {
          const t = (-b - sqrt(discriminant)) / a;
          if (t > 0) tBall = t;
        }

        // The cube: slabs in its own frame; the entry face is where the last slab is entered.
        const lx = rowX + u * rx;
        const ly = rowY + u * ry;
        const lz = rowZ + u * rz;
        let tNear = -FAR;
        let tFar = FAR;
        let face = -1;
        // x slab
        if (lx !== 0) {
          const t1 = (-h - ox) / lx;
          const t2 = (h - ox) / lx;
          const enter = lx > 0 ? t1 : t2;
          const leave = lx > 0 ? t2 : t1;
          if (enter > tNear) {
            tNear = enter;
            face = lx > 0 ? 0 : 1;
          }
          if (leave < tFar) tFar = leave;
        } else if (ox < -h || ox > h) {
          tFar = -FAR;
        }
        // y slab
        if (ly !== 0) {
          const t1 = (-h - oy) / ly;
          const t2 = (h - oy) / ly;
          const enter = ly > 0 ? t1 : t2;
          const leave = ly > 0 ? t2 : t1;
          if (enter > tNear) {
            tNear = enter;
            face = ly > 0 ? 2 : 3;
          }
          if (leave < tFar) tFar = leave;
        } else if (oy < -h || oy > h) {
          tFar = -FAR;
        }
        // z slab
        if (lz !== 0) {
          const t1 = (-h - oz) / lz;
          const t2 = (h - oz) / lz;
          const enter = lz > 0 ? t1 : t2;
          const leave = lz > 0 ? t2 : t1;
          if (enter > tNear) {
            tNear = enter;
            face = lz > 0 ? 4 : 5;
          }
          if (leave < tFar) tFar = leave;
        } else if (oz < -h || oz > h) {
          tFar = -FAR;
        }
        const tCube = tNear <= tFar && tNear > 0 ? tNear : FAR;

        if (tBall < tCube) {
          // The sphere's outward normal at the hit, for its shade.
          const inverseRadius = 1 / br;
          const light = shade((bx + tBall * u) * inverseRadius, (by + tBall * dy) * inverseRadius, (bz + tBall * dz) * inverseRadius);
          out[pixel] = ball[0] * light;
          out[plane + pixel] = ball[1] * light;
          out[2 * plane + pixel] = ball[2] * light;
        } else if (tCube !== FAR) {
          const at = 3 * face;
          out[pixel] = faces[at];
          out[plane + pixel] = faces[at + 1];
          out[2 * plane + pixel] = faces[at + 2];
        }
      }
    }
  }

  /** The colors of the two faces across the cube's `axis`, whose direction in the world is (ax, ay, az). */
  private setFaceColors(axis: number, ax: number, ay: number, az: number): void {
    for (let side = 0; side < 2; side++) {
      const sign = side === 0 ? -1 : 1;
      const light = shade(sign * ax, sign * ay, sign * az);
      const color = axis === 1 && side === 1 ? CAMERA_COLORS.top : CAMERA_COLORS.cube;
      const at = 3 * (2 * axis + side);
      this.faceColors[at] = color[0] * light;
      this.faceColors[at + 1] = color[1] * light;
      this.faceColors[at + 2] = color[2] * light;
    }
  }

  /**
   * Sets `bounds` to the pixel rectangle [colStart, colEnd) x [rowStart, rowEnd) that holds the
   * projections of the cube's corners and of the corners of the box around the ball (a convex
   * body projects inside the projection of its corners); to the whole image if any of them is
   * behind the camera. False when the rectangle misses the image.
   */
  private findBounds(
    r00: number, r01: number, r02: number,
    r10: number, r11: number, r12: number,
    r20: number, r21: number, r22: number,
    ballX: number, ballY: number, ballZ: number, r: number,
  ): boolean {
    const h = PLATFORM_HALF_SIZE;
    this.minU = this.minV = Infinity;
    this.maxU = this.maxV = -Infinity;
    this.behind = false;
    for (let corner = 0; corner < 8; corner++) {
      const x = corner & 1 ? h : -h;
      const y = corner & 2 ? h : -h;
      const z = corner & 4 ? h : -h;
      this.see(r00 * x + r01 * y + r02 * z, r10 * x + r11 * y + r12 * z, r20 * x + r21 * y + r22 * z);
      this.see(ballX + (corner & 1 ? r : -r), ballY + (corner & 2 ? r : -r), ballZ + (corner & 4 ? r : -r));
    }
    const bounds = this.bounds;
    if (this.behind) {
      bounds[0] = 0;
      bounds[1] = this.width;
      bounds[2] = 0;
      bounds[3] = this.height;
      return true;
    }
    // Every pixel whose centre is inside the extent, and one more on each side for rounding.
    bounds[0] = Math.max(0, Math.floor(this.minU * this.pixelsPerUnitX + this.width / 2) - 1);
    bounds[1] = Math.min(this.width, Math.ceil(this.maxU * this.pixelsPerUnitX + this.width / 2) + 1);
    bounds[2] = Math.max(0, Math.floor(this.height / 2 - this.maxV * this.pixelsPerUnitY) - 1);
    bounds[3] = Math.min(this.height, Math.ceil(this.height / 2 - this.minV * this.pixelsPerUnitY) + 1);
    return bounds[0] < bounds[1] && bounds[2] < bounds[3];
  }

  /** Widens the projected extent to hold the world point (x, y, z). */
  private see(x: number, y: number, z: number): void {
    const dx = x - CAMERA_POSITION[0];
    const dy = y - CAMERA_POSITION[1];
    const dz = z - CAMERA_POSITION[2];
    const depth = dy * this.forwardY + dz * this.forwardZ;
    if (depth <= 1e-6) {
      this.behind = true;
      return;
    }
    const u = dx / depth;
    const v = (dy * this.upY + dz * this.upZ) / depth;
    if (u < this.minU) this.minU = u;
    if (u > this.maxU) this.maxU = u;
    if (v < this.minV) this.minV = v;
    if (v > this.maxV) this.maxV = v;
  }
}
