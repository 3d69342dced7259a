/**
 * Decoding PNG-compressed visual observations (ObservationProto with compression_type PNG).
 *
 * What Unity sends, and what ML-Agents' Python side (rpc_utils.process_pixels) makes of it:
 *  - `compressed_data` holds one PNG, or several PNGs back to back when the observation has more
 *    channels than one PNG carries (a stacked camera, a many-layer grid sensor).
 *  - Every byte becomes a float32 `byte / 255`, so values lie in [0, 1].
 *  - The channels of all PNGs, in order, are then combined:
 *      * with a `compressed_channel_mapping` (one entry per PNG channel), PNG channel i feeds
 *        observation channel mapping[i]; a negative entry drops it; observation channels fed by
 *        several PNG channels get their mean (a grayscale camera is sent as RGB with mapping
 *        [0, 0, 0], so it becomes the mean of R, G and B);
 *      * without a mapping, an observation of 1 channel is the mean of the first PNG's channels,
 *        and otherwise the first C channels are kept (padding channels at the end are dropped).
 *  - The result must have exactly the observation's shape.
 *
 * Layout. Unity packages before 2.0 describe a visual observation as [height, width, channels]
 * (HWC) and the Python API of that era returns HWC arrays; from com.unity.ml-agents 2.0 the shape
 * is sent as [channels, height, width] and Python returns CHW arrays. Both are supported: pass the
 * layout the shape is written in ({@link visualLayout} tells which from the proto's fields).
 */
import { PNG } from 'pngjs';
import { DimensionPropertyProto } from '../communicator/messages';

/** Order of the dimensions in a visual observation's shape and in the decoded array. */
export type VisualLayout = 'HWC' | 'CHW';

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];


/**
 * Which layout a rank-3 observation's shape is written in. The dimension properties decide when
 * they are telling (the channel dimension is NONE, the two image dimensions TRANSLATIONAL_EQUIVARIANCE);
 * otherwise the Unity package version does (2.0 and later: CHW); otherwise HWC, the older form.
 */
export function visualLayout(
  dimensionProperties?: readonly number[],
  unityPackageVersion?: string,
): VisualLayout {
  if (dimensionProperties !== undefined && dimensionProperties.length === 3) {
    const [a, b, c] = dimensionProperties;
    const image = DimensionPropertyProto.TRANSLATIONAL_EQUIVARIANCE;
    if (a === DimensionPropertyProto.NONE && b === image && c === image) return 'CHW';
    if (a === image && b === image && c === DimensionPropertyProto.NONE) return 'HWC';
  }
  if (unityPackageVersion !== undefined) {
    const major = Number.parseInt(unityPackageVersion, 10);
    if (Number.isFinite(major)) return major >= 2 ? 'CHW' : 'HWC';
  }
  return 'HWC';
}

function hasSignatureAt(bytes: Uint8Array, offset: number): boolean {
  if (offset + PNG_SIGNATURE.length > bytes.length) return false;
  for (let i = 0; i < PNG_SIGNATURE.length; i++) {
    if (bytes[offset + i] !== PNG_SIGNATURE[i]) return false;
  }
  return true;
}

/**
 * Splits back-to-back PNGs. Each one's end is found by walking its chunks (4-byte big-endian
 * length, 4-byte type, data, 4-byte CRC) up to and including IEND, so bytes inside compressed
 * data that happen to look like a PNG signature cannot cut an image short.
 */
export function splitConcatenatedPngs(bytes: Uint8Array): Uint8Array[] {
  if (bytes.length === 0) {
    throw new Error('Compressed visual observation is empty: expected PNG data.');
  }
  const images: Uint8Array[] = [];
  let start = 0;
  while (start < bytes.length) {
    const index = images.length;
    if (!hasSignatureAt(bytes, start)) {
      throw new Error(
        `Compressed visual observation: expected a PNG signature at byte ${start} (image ${index}), ` +
          `found ${Array.from(bytes.subarray(start, start + 8), (b) => b.toString(16).padStart(2, '0')).join(' ')}.`,
      );
    }
    let offset = start + PNG_SIGNATURE.length;
    let sawEnd = false;
    while (!sawEnd) {
      if (offset + 8 > bytes.length) {
        throw new Error(
          `Compressed visual observation: PNG image ${index} (starting at byte ${start}) is truncated: ` +
            `no IEND chunk before the data ends at byte ${bytes.length}.`,
        );
      }
      const length =
        ((bytes[offset] << 24) | (bytes[offset + 1] << 16) | (bytes[offset + 2] << 8) | bytes[offset + 3]) >>> 0;
      const type = String.fromCharCode(bytes[offset + 4], bytes[offset + 5], bytes[offset + 6], bytes[offset + 7]);
      const next = offset + 12 + length;
      if (next > bytes.length) {
        throw new Error(
          `Compressed visual observation: PNG image ${index} (starting at byte ${start}) is truncated: ` +
            `its ${JSON.stringify(type)} chunk at byte ${offset} needs ${length} data bytes but the data ` +
            `ends at byte ${bytes.length}.`,
        );
      }
      sawEnd = type === 'IEND';
      offset = next;
    }
    images.push(bytes.subarray(start, offset));
    start = offset;
  }
  return images;
}

/** Width and height from a PNG's header chunk (IHDR), which must come first after the signature. */
export function pngDimensions(png: Uint8Array, index: number): { width: number; height: number } {
  const at = PNG_SIGNATURE.length;
  const type = String.fromCharCode(...png.subarray(at + 4, at + 8));
  if (type !== 'IHDR' || png.length < at + 16) {
    throw new Error(`Compressed visual observation: PNG image ${index} does not start with its IHDR header chunk.`);
  }
  const view = new DataView(png.buffer, png.byteOffset, png.byteLength);
  return { width: view.getUint32(at + 8), height: view.getUint32(at + 12) };
}

/** One decoded PNG: `channels` planes of width*height float32 values in [0, 1]. */
interface DecodedImage {
  width: number;
  height: number;
  /** planes[c][y * width + x] */
  planes: Float32Array[];
}

/** Channels a PNG of this color type holds, as ML-Agents' image reader sees them. */
function channelsOf(colorType: number): number {
  switch (colorType) {
    case 0:
      return 1; // grayscale
    case 4:
      return 2; // grayscale + alpha
    case 6:
      return 4; // RGBA
    default:
      return 3; // RGB, and palette images expanded to RGB
  }
}

function decodeOne(bytes: Uint8Array, index: number, count: number): DecodedImage {
  let png: ReturnType<typeof PNG.sync.read>;
  try {
    png = PNG.sync.read(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  } catch (err) {
    const which = count > 1 ? `PNG image ${index} of ${count}` : 'PNG image';
    throw new Error(
      `Compressed visual observation: could not decode ${which}: ${(err as Error).message}`,
    );
  }
  const { width, height, data } = png; // data: RGBA, 8 bits per channel
  const channels = channelsOf(png.colorType);
  const pixels = width * height;
  const planes: Float32Array[] = [];
  // Gray (+alpha) PNGs come back from pngjs as RGBA with R = G = B = gray; alpha sits at byte 3.
  const sourceByte = channels === 1 ? [0] : channels === 2 ? [0, 3] : [0, 1, 2, 3].slice(0, channels);
  for (let c = 0; c < channels; c++) {
    const plane = new Float32Array(pixels);
    const src = sourceByte[c];
    for (let p = 0; p < pixels; p++) plane[p] = data[p * 4 + src] / 255;
    planes.push(plane);
  }
  return { width, height, planes };
}

/**
 * Mean of planes as float32 arithmetic: summed in order, then divided by the count, each step
 * rounded to float32 (what numpy's mean over float32 arrays computes).
 */
function meanOfPlanes(planes: Float32Array[], pixels: number): Float32Array {
  const out = new Float32Array(pixels);
  const n = planes.length;
  for (let p = 0; p < pixels; p++) {
    let sum = 0;
    for (let k = 0; k < n; k++) sum = Math.fround(sum + planes[k][p]);
    out[p] = sum / n; // the store into a Float32Array rounds to float32
  }
  return out;
}

function formatShape(shape: readonly number[]): string {
  return `[${shape.join(', ')}]`;
}

function combineWithMapping(planes: Float32Array[], mapping: readonly number[], pixels: number): Float32Array[] {
  if (mapping.length !== planes.length) {
    throw new Error(
      `Compressed visual observation and its channel mapping disagree: the PNG data has ` +
        `${planes.length} channels but compressed_channel_mapping has ${mapping.length} entries ` +
        `(${formatShape(mapping)}).`,
    );
  }
  const maxTarget = Math.max(...mapping);
  const targets = new Set(mapping.filter((m) => m >= 0));
  if (maxTarget < 0) {
    throw new Error(
      `Invalid compressed_channel_mapping ${formatShape(mapping)}: every channel is dropped, ` +
        'so the observation would have no channels.',
    );
  }
  if (targets.size !== maxTarget + 1) {
    throw new Error(
      `Invalid compressed_channel_mapping ${formatShape(mapping)}: the observation channels it names ` +
        `must be exactly 0..${maxTarget}, each at least once.`,
    );
  }
  if (maxTarget >= planes.length) {
    throw new Error(
      `Invalid compressed_channel_mapping ${formatShape(mapping)}: it names observation channel ` +
        `${maxTarget} but the PNG data has only ${planes.length} channels.`,
    );
  }
  const groups: Float32Array[][] = Array.from({ length: maxTarget + 1 }, () => []);
  mapping.forEach((target, i) => {
    if (target >= 0) groups[target].push(planes[i]);
  });
  // A channel fed by one PNG channel is that plane as it is (its mean would only copy it).
  return groups.map((group) => (group.length === 1 ? group[0] : meanOfPlanes(group, pixels)));
}

/**
 * Decodes a PNG-compressed visual observation into `shape`'s element count of float32 values in
 * [0, 1], laid out as `layout` (HWC by default: index (y * W + x) * C + c).
 *
 * @param compressed   ObservationProto.compressed_data: one PNG or several concatenated.
 * @param shape        ObservationProto.shape: [H, W, C] for HWC, [C, H, W] for CHW.
 * @param channelMapping ObservationProto.compressed_channel_mapping; empty or absent for none.
 */
export function decodePngObservation(
  compressed: Uint8Array,
  shape: readonly number[],
  channelMapping?: readonly number[],
  options: { layout?: VisualLayout } = {},
): Float32Array {
  const layout = options.layout ?? 'HWC';
  if (shape.length !== 3 || !shape.every((d) => Number.isInteger(d) && d > 0)) {
    throw new Error(
      `A PNG-compressed observation needs a shape of three positive sizes (${
        layout === 'HWC' ? 'height, width, channels' : 'channels, height, width'
      }); got ${formatShape(shape)}.`,
    );
  }
  const [height, width, channels] =
    layout === 'HWC' ? [shape[0], shape[1], shape[2]] : [shape[1], shape[2], shape[0]];

  const pngs = splitConcatenatedPngs(compressed);
  // Decoding allocates what the header declares, whatever the data holds: check it first.
  const maxImages = channelMapping !== undefined && channelMapping.length > 0 ? channelMapping.length : channels;
  if (pngs.length > maxImages) {
    throw new Error(
      `Compressed visual observation holds ${pngs.length} PNG images, but its ` +
        `${maxImages === channels ? `shape ${formatShape(shape)}` : 'channel mapping'} allows at most ${maxImages}.`,
    );
  }
  pngs.forEach((bytes, i) => {
    const header = pngDimensions(bytes, i);
    if (header.width !== width || header.height !== height) {
      throw new Error(
        `Compressed visual observation: PNG image ${i} is ${header.width}x${header.height} (width x height) ` +
          `but the observation's shape ${formatShape(shape)} (${layout}) needs ${width}x${height}.`,
      );
    }
  });
  const images = pngs.map((bytes, i) => decodeOne(bytes, i, pngs.length));
  const first = images[0];
  const pixels = first.width * first.height;
  const allPlanes = images.flatMap((img) => img.planes);

  let planes: Float32Array[];
  if (channelMapping !== undefined && channelMapping.length > 0) {
    planes = combineWithMapping(allPlanes, channelMapping, pixels);
  } else if (channels === 1) {
    planes = [meanOfPlanes(first.planes, pixels)];
  } else {
    planes = allPlanes.slice(0, channels);
  }

  if (first.height !== height || first.width !== width || planes.length !== channels) {
    const got =
      layout === 'HWC'
        ? [first.height, first.width, planes.length]
        : [planes.length, first.height, first.width];
    throw new Error(
      `Decompressed visual observation has shape ${formatShape(got)} (${layout}) but the observation's ` +
        `shape is ${formatShape(shape)}: expected ${height * width * channels} values, decoded ` +
        `${got[0] * got[1] * got[2]} (${images.length} PNG image${images.length === 1 ? '' : 's'} with ` +
        `${allPlanes.length} channels in all).`,
    );
  }

  const out = new Float32Array(pixels * channels);
  if (layout === 'CHW') {
    planes.forEach((plane, c) => out.set(plane, c * pixels));
  } else {
    for (let c = 0; c < channels; c++) {
      const plane = planes[c];
      for (let p = 0; p < pixels; p++) out[p * channels + c] = plane[p];
    }
  }
  return out;
}
