/**
 * WebGPU under tfjs: Google's Dawn for Node (the `webgpu` package, its native `dawn.node` inside
 * the package) and @tensorflow/tfjs-backend-webgpu. Dawn drives Vulkan (Linux), Metal (macOS)
 * and Direct3D 12 (Windows): any recent GPU, no CUDA.
 *
 * Dawn also offers software adapters (SwiftShader, llvmpipe): real WebGPU computed on the CPU,
 * far slower than the wasm backend. Only a backend asked for as 'webgpu-software' takes one;
 * that is how CI checks the GPU path on machines without a GPU (scripts/with-swiftshader.sh).
 *
 * In Node, tfjs's webgpu backend reads results back only asynchronously: its synchronous read
 * draws through an OffscreenCanvas, a browser object, and Dawn for Node has no blocking map
 * either. Passes that read values mid-way therefore cannot run on it (see backend.ts).
 */
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import * as tf from '@tensorflow/tfjs';

/** Whether an adapter is a GPU or a CPU implementation of WebGPU. */
export type AdapterKind = 'hardware' | 'software';

/** What the log says about the adapter the models run on. */
export interface AdapterDescription {
  readonly vendor: string;
  readonly architecture: string;
  readonly device: string;
  readonly description: string;
  readonly kind: AdapterKind;
}

/** Bytes and counts crossing between JavaScript and the GPU since the backend started. */
export interface TransferCounts {
  uploads: number;
  uploadBytes: number;
  downloads: number;
  downloadBytes: number;
}

/** The slice of Dawn's and tfjs's WebGPU objects used here (both are untyped JavaScript to us). */
interface GpuAdapterInfo {
  readonly vendor: string;
  readonly architecture: string;
  readonly device: string;
  readonly description: string;
  readonly isFallbackAdapter?: boolean;
}
interface GpuAdapter {
  readonly info: GpuAdapterInfo;
  readonly features: ReadonlySet<string>;
  readonly limits: Record<string, number>;
  requestDevice(descriptor: object): Promise<unknown>;
}
interface Gpu {
  requestAdapter(options?: { powerPreference?: string; forceFallbackAdapter?: boolean }): Promise<GpuAdapter | null>;
}
interface Dawn {
  create(flags: string[]): Gpu;
  globals: Record<string, unknown>;
}
interface TensorRecord {
  readonly shape: number[];
  readonly dtype: tf.DataType;
  readonly values: unknown;
  readonly resource: unknown;
}
interface WebGpuBackendInstance extends tf.KernelBackend {
  readonly tensorMap: { get(dataId: object): TensorRecord };
  uploadToGPU(dataId: object): void;
}
type WebGpuBackendClass = new (device: unknown, adapterInfo: GpuAdapterInfo) => WebGpuBackendInstance;

/** The name tfjs knows the backend by (its kernels are registered under it). */
export const WEBGPU_TFJS_NAME = 'webgpu';

/** Architectures and descriptions of CPU implementations of WebGPU. */
const SOFTWARE_NAMES = /swiftshader|llvmpipe|lavapipe|softpipe|microsoft basic render|\bwarp\b/i;

const transfers: TransferCounts = { uploads: 0, uploadBytes: 0, downloads: 0, downloadBytes: 0 };

/** The transfers counted so far (a copy), to compare before and after a piece of work. */
export function webGpuTransfers(): TransferCounts {
  return { ...transfers };
}

/**
 * Finds an adapter of `kind` and, with `start`, makes tfjs's 'webgpu' backend run on it. Returns
 * the adapter, or why none can run; never throws for a missing package, driver or adapter.
 */
export async function activateWebGpu(kind: AdapterKind, start: boolean): Promise<{ adapter: AdapterDescription } | { failure: string }> {
  const loaded = loadPackages();
  if (typeof loaded === 'string') return { failure: loaded };
  if (process.platform === 'linux' && !vulkanLoaderFound()) {
    return { failure: 'no Vulkan loader (libvulkan.so.1), through which Dawn reaches GPUs on Linux: install your GPU\'s Vulkan driver (Debian: libvulkan1)' };
  }
  const gpu = loaded.dawn.create([]);
  const adapter = await findAdapter(gpu, kind);
  if (typeof adapter === 'string') return { failure: adapter };
  const description = describeAdapter(adapter.info);
  if (!start) return { adapter: description };
  let device: unknown;
  try {
    device = await adapter.requestDevice(deviceDescriptor(adapter));
  } catch (error) {
    return { failure: `the adapter (${adapterLine(description)}) refused a device: ${(error as Error).message}` };
  }
  exposeGpu(gpu);
  let backend: WebGpuBackendInstance;
  try {
    backend = countTransfers(new loaded.Backend(device, adapter.info));
  } catch (error) {
    return { failure: `tfjs's webgpu backend failed to start: ${(error as Error).message}` };
  }
  if (tf.findBackend(WEBGPU_TFJS_NAME) !== null) tf.removeBackend(WEBGPU_TFJS_NAME);
  // Priority 0: tfjs never starts it on its own, only when selected.
  tf.registerBackend(WEBGPU_TFJS_NAME, () => backend, 0);
  if (!(await tf.setBackend(WEBGPU_TFJS_NAME))) return { failure: 'tfjs could not start its webgpu backend' };
  return { adapter: description };
}

/** "vendor architecture (description), kind": how the log names an adapter. */
export function adapterLine(adapter: AdapterDescription): string {
  const name = [adapter.vendor, adapter.architecture].filter((part) => part !== '').join(' ') || 'unnamed adapter';
  const details = [adapter.description, adapter.device].filter((part) => part !== '').join(', ');
  return `${name}${details === '' ? '' : ` (${details})`}, ${adapter.kind}`;
}

export function describeAdapter(info: GpuAdapterInfo): AdapterDescription {
  const { vendor, architecture, device, description } = info;
  const software = info.isFallbackAdapter === true || SOFTWARE_NAMES.test(`${architecture} ${device} ${description}`);
  return { vendor, architecture, device, description, kind: software ? 'software' : 'hardware' };
}

/** tfjs's backend looks for WebGPU where a browser has it, at navigator.gpu. */
function exposeGpu(gpu: Gpu): void {
  const navigator = (globalThis as { navigator?: object }).navigator;
  if (navigator === undefined) Object.defineProperty(globalThis, 'navigator', { value: { gpu }, configurable: true, writable: true });
  else Object.defineProperty(navigator, 'gpu', { value: gpu, configurable: true, writable: true });
}

/**
 * Whether the dynamic linker can find Vulkan's loader. Without it Dawn finds no adapter anyway,
 * after printing a native warning with its source path: checked first, the log keeps one clear line.
 */
function vulkanLoaderFound(): boolean {
  const libraryPath = (process.env.LD_LIBRARY_PATH ?? '').split(':').filter((dir) => dir !== '');
  const usual = ['/usr/lib/x86_64-linux-gnu', '/usr/lib/aarch64-linux-gnu', '/usr/lib64', '/usr/lib', '/lib/x86_64-linux-gnu', '/lib64', '/lib'];
  if ([...libraryPath, ...usual].some((dir) => fs.existsSync(path.join(dir, 'libvulkan.so.1')))) return true;
  // Elsewhere only the linker's cache knows; where it cannot be asked, let Dawn look.
  const cache = spawnSync('ldconfig', ['-p'], { encoding: 'utf8', env: { ...process.env, PATH: `${process.env.PATH ?? ''}:/sbin:/usr/sbin` } });
  return cache.status !== 0 || cache.stdout.includes('libvulkan.so.1');
}

/** Dawn and tfjs's WebGPU backend class, or why they cannot load. */
function loadPackages(): { dawn: Dawn; Backend: WebGpuBackendClass } | string {
  let dawn: Dawn;
  try {
    // The package's own entry is an ES module, which Node 20 cannot require: take its native
    // module for this platform directly.
    const root = path.dirname(require.resolve('webgpu/package.json'));
    const platform = process.platform === 'darwin' ? 'darwin-universal' : `${process.platform}-${process.arch}`;
    dawn = require(path.join(root, 'dist', platform, 'dawn.node')) as Dawn;
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    if (code === 'MODULE_NOT_FOUND' && message.includes("'webgpu/package.json'")) {
      return 'the webgpu package is not installed (install it with: npm install webgpu @tensorflow/tfjs-backend-webgpu)';
    }
    return `the webgpu package does not load here: ${message.split('\n')[0]}`;
  }
  // tfjs's backend names WebGPU's constants (GPUBufferUsage, GPUMapMode, ...) as globals, as in a browser.
  Object.assign(globalThis, dawn.globals);
  try {
    const { WebGPUBackend } = require('@tensorflow/tfjs-backend-webgpu') as { WebGPUBackend: WebGpuBackendClass };
    return { dawn, Backend: WebGPUBackend };
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    if (code === 'MODULE_NOT_FOUND') return '@tensorflow/tfjs-backend-webgpu is not installed (install it with: npm install @tensorflow/tfjs-backend-webgpu)';
    return `@tensorflow/tfjs-backend-webgpu does not load: ${message.split('\n')[0]}`;
  }
}

/**
 * The adapter of `kind`: Dawn's high-performance one for hardware; for software, its fallback
 * adapter, or the only adapter when that one is software (SwiftShader as Vulkan's only driver).
 */
async function findAdapter(gpu: Gpu, kind: AdapterKind): Promise<GpuAdapter | string> {
  const preferred = await gpu.requestAdapter(kind === 'hardware' ? { powerPreference: 'high-performance' } : { forceFallbackAdapter: true });
  const adapter = preferred ?? (kind === 'software' ? await gpu.requestAdapter() : null);
  if (adapter === null) return 'no WebGPU adapter found (no GPU driver Dawn can use: Vulkan, Metal or Direct3D 12)';
  const found = describeAdapter(adapter.info);
  if (found.kind === kind) return adapter;
  return kind === 'hardware'
    ? `the only WebGPU adapter is a software one (${adapterLine(found)}), slower than wasm; --backend webgpu-software takes it`
    : `no software WebGPU adapter found (the adapter is ${adapterLine(found)}; --backend webgpu takes it)`;
}

/** Asks for the limits tfjs's own factory asks for, the adapter's largest. */
function deviceDescriptor(adapter: GpuAdapter): object {
  const limits = [
    'maxComputeWorkgroupStorageSize',
    'maxComputeWorkgroupsPerDimension',
    'maxStorageBufferBindingSize',
    'maxBufferSize',
    'maxComputeWorkgroupSizeX',
    'maxComputeInvocationsPerWorkgroup',
  ];
  return {
    requiredFeatures: adapter.features.has('timestamp-query') ? ['timestamp-query'] : [],
    requiredLimits: Object.fromEntries(limits.map((name) => [name, adapter.limits[name]])),
  };
}

/** Counts the backend's uploads (values written to a GPU buffer) and downloads (GPU buffers read). */
function countTransfers(backend: WebGpuBackendInstance): WebGpuBackendInstance {
  const bytes = (record: TensorRecord) => 4 * record.shape.reduce((a, b) => a * b, 1);
  const upload = backend.uploadToGPU.bind(backend);
  backend.uploadToGPU = (dataId) => {
    const record = backend.tensorMap.get(dataId);
    if (record.resource == null && record.values != null) {
      transfers.uploads++;
      transfers.uploadBytes += bytes(record);
    }
    upload(dataId);
  };
  const read = backend.read.bind(backend);
  backend.read = (dataId) => {
    const record = backend.tensorMap.get(dataId);
    if (record.values == null) {
      transfers.downloads++;
      transfers.downloadBytes += bytes(record);
    }
    return read(dataId);
  };
  return backend;
}
