import * as tf from '@tensorflow/tfjs';
import { memoryLogger } from '../../src/common/logger';
import { BackendUnavailableError, backendForTorchDevice, selectBackend, selectedBackend } from '../../src/networks/backend';

/** Whether npm could install a package here (tfjs-node's native builds often cannot). */
function installed(name: string): boolean {
  try {
    require.resolve(name);
    return true;
  } catch {
    return false;
  }
}

const hasTfjsNode = installed('@tensorflow/tfjs-node');
const hasTfjsNodeGpu = installed('@tensorflow/tfjs-node-gpu');

describe('selectBackend', () => {
  it('auto takes the fastest backend that loads and says why the faster ones did not', async () => {
    const logger = memoryLogger();
    const selected = await selectBackend('auto', logger);
    const lines = logger.lines.map((l) => l.message);
    if (hasTfjsNode) {
      expect(selected.name).toMatch(/^tensorflow/);
      return;
    }
    expect(selected).toEqual({ name: 'wasm', packageName: '@tensorflow/tfjs-backend-wasm' });
    expect(tf.getBackend()).toBe('wasm');
    expect(lines[0]).toBe('Running the models on the wasm backend (@tensorflow/tfjs-backend-wasm).');
    expect(lines).toContain(
      'Backend tensorflow: @tensorflow/tfjs-node is not installed (install it with: npm install @tensorflow/tfjs-node)',
    );
    // The GPU backends come first, each passed over with its own reason (no GPU here, or not installed).
    expect(lines[1]).toMatch(/^Backend webgpu: /);
    expect(lines[2]).toMatch(/^Backend tensorflow-gpu: /);
  });

  it('auto stays off the GPU when the torch device is the CPU', async () => {
    const logger = memoryLogger();
    const { requested, options } = backendForTorchDevice('cpu');
    await selectBackend(requested, logger, options);
    const lines = logger.lines.map((l) => l.message);
    expect(lines).toContain('Backend webgpu: the torch device is the CPU');
    expect(lines).toContain('Backend tensorflow-gpu: the torch device is the CPU');
  });

  it('loads wasm and cpu by name', async () => {
    expect((await selectBackend('cpu', memoryLogger())).name).toBe('cpu');
    expect(tf.getBackend()).toBe('cpu');
    expect(selectedBackend()).toBe('cpu');
    expect((await selectBackend('wasm', memoryLogger())).name).toBe('wasm');
    expect(tf.getBackend()).toBe('wasm');
    expect(selectedBackend()).toBe('wasm');
    expect(tf.tidy(() => tf.matMul(tf.ones([2, 3]), tf.ones([3, 2])).dataSync()[0])).toBe(3);
  });

  (hasTfjsNode ? it.skip : it)('names the package and its install command when tensorflow is asked for and absent', async () => {
    const attempt = selectBackend('tensorflow', memoryLogger());
    await expect(attempt).rejects.toThrow(BackendUnavailableError);
    await expect(selectBackend('tensorflow', memoryLogger())).rejects.toThrow(
      'The tensorflow backend cannot run: @tensorflow/tfjs-node is not installed (install it with: npm install @tensorflow/tfjs-node)',
    );
  });

  (hasTfjsNodeGpu ? it.skip : it)('names the GPU package when tensorflow-gpu is asked for and absent', async () => {
    await expect(selectBackend('tensorflow-gpu', memoryLogger())).rejects.toThrow(
      'npm install @tensorflow/tfjs-node-gpu',
    );
  });
});

describe('backendForTorchDevice', () => {
  it('maps upstream --torch-device values', () => {
    expect(backendForTorchDevice(null)).toEqual({ requested: 'auto', options: {} });
    expect(backendForTorchDevice(undefined)).toEqual({ requested: 'auto', options: {} });
    expect(backendForTorchDevice('cpu')).toEqual({ requested: 'auto', options: { allowGpu: false } });
    expect(backendForTorchDevice('cuda')).toEqual({ requested: 'webgpu', options: {} });
    expect(backendForTorchDevice('cuda:1')).toEqual({ requested: 'webgpu', options: {} });
    expect(backendForTorchDevice('gpu')).toEqual({ requested: 'webgpu', options: {} });
  });

  it('refuses devices tfjs has no counterpart for', () => {
    expect(() => backendForTorchDevice('mps')).toThrow('--torch-device mps has no tfjs counterpart: use cpu, cuda, cuda:N or gpu');
  });
});
