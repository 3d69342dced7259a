/**
 * Which tfjs backend runs the models. tfjs ships several; the fastest one present on the machine
 * is chosen at start and said in the log, together with why each faster one was passed over:
 *
 *   tensorflow-gpu  @tensorflow/tfjs-node-gpu  libtensorflow with CUDA; only worth it with a CUDA GPU
 *   tensorflow      @tensorflow/tfjs-node      libtensorflow on the CPU
 *   wasm            @tensorflow/tfjs-backend-wasm  XNNPACK in WebAssembly: the embedded default
 *   cpu             @tensorflow/tfjs (built in) plain JavaScript, always present, slowest
 *
 * The wasm backend has no Conv2DBackpropFilter kernel and slow convolution-gradient kernels: the
 * visual encoders' layers build their backward passes from forward convolutions instead
 * (layers/conv2d.ts), so that every backend trains them.
 */
import * as fs from 'fs';
import * as tf from '@tensorflow/tfjs';
import type { Backend } from '../config/settings';
import type { Logger } from '../common/logger';

/** A backend that can run the models; `Backend` (the --backend flag) adds 'auto'. */
export type BackendName = Exclude<Backend, 'auto'>;

/** Fastest first: the order 'auto' tries. */
const BACKEND_ORDER: readonly BackendName[] = ['tensorflow-gpu', 'tensorflow', 'wasm', 'cpu'];

interface BackendInfo {
  /** The npm package that provides it. */
  readonly packageName: string;
  /** The name tfjs registers it under. */
  readonly tfjsName: string;
}

const BACKENDS: Record<BackendName, BackendInfo> = {
  'tensorflow-gpu': { packageName: '@tensorflow/tfjs-node-gpu', tfjsName: 'tensorflow' },
  tensorflow: { packageName: '@tensorflow/tfjs-node', tfjsName: 'tensorflow' },
  wasm: { packageName: '@tensorflow/tfjs-backend-wasm', tfjsName: 'wasm' },
  cpu: { packageName: '@tensorflow/tfjs', tfjsName: 'cpu' },
};

/** The backend selectBackend activated last; null before the first selection. */
let selected: BackendName | null = null;

/**
 * The backend the models run on: the one selectBackend activated, or tfjs's own default (cpu)
 * when none was selected. A worker thread starts on this one too.
 */
export function selectedBackend(): BackendName {
  return selected ?? 'cpu';
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
  /** A CUDA device index for tensorflow-gpu (from --torch-device cuda:N). */
  readonly cudaDevice?: number;
}

/**
 * Loads and activates a backend. 'auto' tries BACKEND_ORDER and logs which one runs and why the
 * faster ones did not; a backend asked for by name that cannot load is an error naming its
 * package and how to install it.
 */
export async function selectBackend(
  requested: Backend,
  logger: Logger,
  options: BackendSelectionOptions = {},
): Promise<SelectedBackend> {
  // Production mode skips tfjs's debug checks and its console banner about tfjs-node.
  tf.enableProdMode();
  if (requested !== 'auto') {
    const failure = await activate(requested, options);
    if (failure !== null) {
      throw new BackendUnavailableError(`The ${requested} backend cannot run: ${failure}`);
    }
    selected = requested;
    logger.info(`Running the models on the ${requested} backend (${BACKENDS[requested].packageName}).`);
    const gpuAbsence = requested === 'tensorflow-gpu' ? cudaGpuAbsence() : null;
    if (gpuAbsence !== null) logger.warning(`tensorflow-gpu was asked for but ${gpuAbsence}: libtensorflow runs on the CPU.`);
    return { name: requested, packageName: BACKENDS[requested].packageName };
  }
  const passedOver: string[] = [];
  for (const name of BACKEND_ORDER) {
    if (name === 'tensorflow-gpu') {
      const gpuFailure = options.allowGpu === false ? 'the torch device is the CPU' : cudaGpuAbsence();
      if (gpuFailure !== null) {
        passedOver.push(`${name}: ${gpuFailure}`);
        continue;
      }
    }
    const failure = await activate(name, options);
    if (failure === null) {
      selected = name;
      logger.info(`Running the models on the ${name} backend (${BACKENDS[name].packageName}).`);
      for (const line of passedOver) logger.info(`Backend ${line}`);
      return { name, packageName: BACKENDS[name].packageName };
    }
    passedOver.push(`${name}: ${failure}`);
  }
  // The cpu backend is part of @tensorflow/tfjs itself, so this means tfjs is broken.
  throw new BackendUnavailableError(`No tfjs backend could start:\n  ${passedOver.join('\n  ')}`);
}

/**
 * What upstream's --torch-device means here: unset lets 'auto' choose, 'cpu' keeps auto off the
 * GPU, 'cuda' and 'cuda:N' ask for tensorflow-gpu (on device N).
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
  const cuda = /^cuda(?::(\d+))?$/.exec(device);
  if (cuda !== null) {
    const index = cuda[1] === undefined ? undefined : Number(cuda[1]);
    return { requested: 'tensorflow-gpu', options: index === undefined ? {} : { cudaDevice: index } };
  }
  throw new BackendUnavailableError(
    `--torch-device ${device} has no tfjs counterpart: use cpu, cuda or cuda:N (or our --backend flag).`,
  );
}

/** Loads and activates one backend; returns null on success, otherwise why it cannot run. */
async function activate(name: BackendName, options: BackendSelectionOptions): Promise<string | null> {
  const { packageName, tfjsName } = BACKENDS[name];
  if (name === 'tensorflow-gpu' && options.cudaDevice !== undefined && process.env.CUDA_VISIBLE_DEVICES === undefined) {
    // libtensorflow reads this once, when it loads: it makes device N the one it sees.
    process.env.CUDA_VISIBLE_DEVICES = String(options.cudaDevice);
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
