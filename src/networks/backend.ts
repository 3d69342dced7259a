/**
 * Which tfjs backend runs the models. tfjs ships several; the fastest one present on the machine
 * is chosen at start and said in the log, together with why each faster one was passed over:
 *
 *   webgpu           @tensorflow/tfjs-backend-webgpu  any GPU through Dawn (webgpu.ts), no CUDA
 *   tensorflow-gpu   @tensorflow/tfjs-node-gpu  libtensorflow with CUDA; only worth it with a CUDA GPU
 *   tensorflow       @tensorflow/tfjs-node      libtensorflow on the CPU
 *   wasm             @tensorflow/tfjs-backend-wasm  XNNPACK in WebAssembly: the embedded default
 *   cpu              @tensorflow/tfjs (built in) plain JavaScript, always present, slowest
 *
 * webgpu-software is WebGPU on a CPU implementation (SwiftShader, llvmpipe): never chosen by
 * 'auto', only by name, to check the GPU path where there is no GPU. A WebGPU backend that cannot
 * run, asked for by name or not, falls back to wasm with one line saying why.
 *
 * The wasm backend has no Conv2DBackpropFilter kernel and slow convolution-gradient kernels: the
 * visual encoders' layers build their backward passes from forward convolutions instead
 * (layers/conv2d.ts), so that every backend trains them.
 */
import * as fs from 'fs';
import * as tf from '@tensorflow/tfjs';
import type { Backend } from '../config/settings';
import type { Logger } from '../common/logger';
import { AdapterKind, activateWebGpu, adapterLine } from './webgpu';

/** A backend that can run the models; `Backend` (the --backend flag) adds 'auto'. */
export type BackendName = Exclude<Backend, 'auto'>;

/** Fastest first: the order 'auto' tries (webgpu-software is never tried: asked for by name only). */
const BACKEND_ORDER: readonly BackendName[] = ['webgpu', 'tensorflow-gpu', 'tensorflow', 'wasm', 'cpu'];

/** The WebGPU backends, by the kind of adapter each takes. */
const WEBGPU_ADAPTERS: Partial<Record<BackendName, AdapterKind>> = { webgpu: 'hardware', 'webgpu-software': 'software' };

interface BackendInfo {
  /** The npm package that provides it. */
  readonly packageName: string;
  /** The name tfjs registers it under. */
  readonly tfjsName: string;
}

const BACKENDS: Record<BackendName, BackendInfo> = {
  webgpu: { packageName: '@tensorflow/tfjs-backend-webgpu', tfjsName: 'webgpu' },
  'webgpu-software': { packageName: '@tensorflow/tfjs-backend-webgpu', tfjsName: 'webgpu' },
  'tensorflow-gpu': { packageName: '@tensorflow/tfjs-node-gpu', tfjsName: 'tensorflow' },
  tensorflow: { packageName: '@tensorflow/tfjs-node', tfjsName: 'tensorflow' },
  wasm: { packageName: '@tensorflow/tfjs-backend-wasm', tfjsName: 'wasm' },
  cpu: { packageName: '@tensorflow/tfjs', tfjsName: 'cpu' },
};

/** The backend selectBackend activated last; null before the first selection. */
let selected: BackendName | null = null;
/** The WebGPU backend a training run's updates run on, in their own thread (null: on `selected`). */
let updatesOn: BackendName | null = null;

/** The backend the models run on: the one selectBackend activated, or tfjs's own default (cpu) when none was selected. */
export function selectedBackend(): BackendName {
  return selected ?? 'cpu';
}

/** The backend PPO's update thread starts on: the WebGPU backend chosen for a training run's updates, else selectedBackend(). */
export function updateBackend(): BackendName {
  return updatesOn ?? selectedBackend();
}

/** A backend that was asked for by name and cannot run here. */
export class BackendUnavailableError extends Error {
  override name = 'BackendUnavailableError';
}

export interface SelectedBackend {
  readonly name: BackendName;
  readonly packageName: string;
}

export interface BackendSelectionOptions {
  /** false keeps 'auto' off the GPU (what --torch-device cpu asks for). */
  readonly allowGpu?: boolean;
  /**
   * Set for a training run: why its updates cannot run on WebGPU, or null when they can (PPO's,
   * POCA's and SAC's, in their update thread: see updateBackend() and trainers/gpu-updates.ts). Acting reads its actions back at every step, which
   * tfjs's webgpu backend cannot do synchronously in Node, so a WebGPU backend chosen for a
   * training run takes the updates only, and the main thread acts on wasm.
   */
  readonly gpuUpdatesRefusal?: string | null;
}

/**
 * Loads and activates a backend. 'auto' tries BACKEND_ORDER and logs which one runs and why the
 * faster ones did not; a WebGPU backend asked for by name that cannot run falls back to wasm with
 * one warning saying why; any other backend asked for by name that cannot load is an error
 * naming its package and how to install it.
 */
export async function selectBackend(
  requested: Backend,
  logger: Logger,
  options: BackendSelectionOptions = {},
): Promise<SelectedBackend> {
  // Production mode skips tfjs's debug checks and its console banner about tfjs-node.
  tf.enableProdMode();
  if (WEBGPU_ADAPTERS[requested as BackendName] !== undefined) {
    const name = requested as BackendName;
    const failure = await activate(name, options);
    if (failure === null) return chosen(name, logger);
    logger.warning(`The ${name} backend cannot run (${failure}): running the models on wasm instead.`);
    return selectBackend('wasm', logger, options);
  }
  if (requested !== 'auto') {
    const failure = await activate(requested, options);
    if (failure !== null) {
      throw new BackendUnavailableError(`The ${requested} backend cannot run: ${failure}`);
    }
    const gpuAbsence = requested === 'tensorflow-gpu' ? cudaGpuAbsence() : null;
    const result = chosen(requested, logger);
    if (gpuAbsence !== null) logger.warning(`tensorflow-gpu was asked for but ${gpuAbsence}: libtensorflow runs on the CPU.`);
    return result;
  }
  const passedOver: string[] = [];
  for (const name of BACKEND_ORDER) {
    const gpuFailure = gpuBackendAbsence(name, options);
    if (gpuFailure !== null) {
      passedOver.push(`${name}: ${gpuFailure}`);
      continue;
    }
    const failure = await activate(name, options);
    if (failure === null) {
      const result = chosen(name, logger);
      for (const line of passedOver) logger.info(`Backend ${line}`);
      return result;
    }
    passedOver.push(`${name}: ${failure}`);
  }
  // The cpu backend is part of @tensorflow/tfjs itself, so this means tfjs is broken.
  throw new BackendUnavailableError(`No tfjs backend could start:\n  ${passedOver.join('\n  ')}`);
}

/** Records and logs the backend that now runs the models. */
function chosen(name: BackendName, logger: Logger): SelectedBackend {
  const { packageName } = BACKENDS[name];
  if (WEBGPU_ADAPTERS[name] === undefined) {
    selected = name;
    updatesOn = null;
    logger.info(`Running the models on the ${name} backend (${packageName}).`);
  } else if (updatesOn === name) {
    logger.info(`Running the updates on the ${name} backend (${packageName}) on ${webGpuAdapter}, in the update thread; acting on the wasm backend.`);
  } else {
    selected = name;
    logger.info(`Running the models on the ${name} backend (${packageName}) on ${webGpuAdapter}.`);
  }
  return { name, packageName };
}

/** Why 'auto' skips a GPU backend without trying it, or null. */
function gpuBackendAbsence(name: BackendName, options: BackendSelectionOptions): string | null {
  if (name !== 'tensorflow-gpu' && name !== 'webgpu') return null;
  if (options.allowGpu === false) return 'the torch device is the CPU';
  return name === 'tensorflow-gpu' ? cudaGpuAbsence() : null;
}

/**
 * What upstream's --torch-device means here: unset lets 'auto' choose, 'cpu' keeps auto off the
 * GPU, 'cuda', 'cuda:N' and 'gpu' ask for the GPU through WebGPU. WebGPU takes Dawn's
 * high-performance adapter: a CUDA device index has no counterpart, and is said so in the log.
 */
export function backendForTorchDevice(device: string | null | undefined): {
  requested: Backend;
  options: BackendSelectionOptions;
} {
  if (device === null || device === undefined || device === '') {
    return { requested: 'auto', options: {} };
  }
  if (device === 'cpu') {
    return { requested: 'auto', options: { allowGpu: false } };
  }
  if (/^(cuda(:\d+)?|gpu)$/.test(device)) return { requested: 'webgpu', options: {} };
  throw new BackendUnavailableError(
    `--torch-device ${device} has no tfjs counterpart: use cpu, cuda, cuda:N or gpu (or our --backend flag).`,
  );
}

/** The adapter the WebGPU backend runs on, as the log names it. */
let webGpuAdapter = '';

/** Loads and activates one backend; returns null on success, otherwise why it cannot run. */
async function activate(name: BackendName, options: BackendSelectionOptions): Promise<string | null> {
  const { packageName, tfjsName } = BACKENDS[name];
  const adapterKind = WEBGPU_ADAPTERS[name];
  if (adapterKind !== undefined) {
    const training = options.gpuUpdatesRefusal !== undefined;
    const started = await activateWebGpu(adapterKind, !training);
    if ('failure' in started) return started.failure;
    webGpuAdapter = adapterLine(started.adapter);
    if (!training) return null;
    if (options.gpuUpdatesRefusal !== null) return `found the adapter ${webGpuAdapter}, but ${options.gpuUpdatesRefusal}`;
    // The update thread starts WebGPU on its own; this thread acts on wasm.
    const actingFailure = await activate('wasm', {});
    if (actingFailure !== null) return `acting needs the wasm backend: ${actingFailure}`;
    selected = 'wasm';
    updatesOn = name;
    return null;
  }
  if (name === 'tensorflow' || name === 'tensorflow-gpu') {
    const loadFailure = requireOptional(packageName);
    if (loadFailure !== null) return loadFailure;
    if (tf.findBackendFactory(tfjsName) === null) {
      return `${packageName} loaded but registered no '${tfjsName}' backend (is it the same version as @tensorflow/tfjs ${tf.version.tfjs}?)`;
    }
  }
  if (name === 'wasm') {
    const loadFailure = requireOptional(packageName);
    if (loadFailure !== null) return loadFailure;
  }
  try {
    if (!(await tf.setBackend(tfjsName))) {
      return `${packageName} is installed but its backend failed to initialize`;
    }
    await tf.ready();
  } catch (error) {
    return `${packageName} is installed but its backend failed to initialize: ${(error as Error).message}`;
  }
  return null;
}

/** Requires a package that may be absent; returns null when it loaded, otherwise a clear reason. */
function requireOptional(packageName: string): string | null {
  try {
    require(packageName);
    return null;
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    if (code === 'MODULE_NOT_FOUND' && message.includes(`'${packageName}'`)) {
      return `${packageName} is not installed (install it with: npm install ${packageName})`;
    }
    // Installed but its native part does not load (missing libtensorflow, CUDA or cuDNN).
    return `${packageName} is installed but does not load: ${message.split('\n')[0]}`;
  }
}

/** null when a CUDA GPU looks present (the NVIDIA driver is loaded), otherwise why not. */
function cudaGpuAbsence(): string | null {
  if (process.platform === 'linux') {
    return fs.existsSync('/proc/driver/nvidia/version') ? null : 'no CUDA GPU found (no NVIDIA driver loaded)';
  }
  if (process.platform === 'win32') {
    const systemRoot = process.env.SystemRoot ?? 'C:\\Windows';
    return fs.existsSync(`${systemRoot}\\System32\\nvcuda.dll`) ? null : 'no CUDA GPU found (no nvcuda.dll)';
  }
  return `no CUDA support on ${process.platform}`;
}
