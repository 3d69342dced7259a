/**
 * The live progress lines, drawn on a stand-in terminal: a stream object that says it is a TTY
 * and keeps a screen, applying the cursor and erase sequences a terminal would. What the user
 * would see is then checked line by line; a stream that is not a TTY must receive nothing.
 */
import { Logger, LogLevel, memoryLogger } from '../../src/common/logger';
import { ProgressDisplay, ProgressStream, rateAndTimeLeft, waitingLine } from '../../src/stats/progress-display';

/** A terminal screen: enough of VT100 for readline's cursor moves and erases. */
class FakeTerminal implements ProgressStream {
  readonly isTTY = true;
  readonly columns = 120;
  readonly screen: string[] = [''];
  written = '';
  private row = 0;
  private column = 0;

  write(text: string): boolean {
    this.written += text;
    const pattern = /\x1b\[(\??)([\d;]*)([A-Za-z])|\x1b[78]|\r|\n|[^\x1b\r\n]+/g;
    for (const match of text.matchAll(pattern)) {
      const token = match[0];
      if (token === '\n') {
        this.row += 1;
        this.column = 0;
        while (this.screen.length <= this.row) this.screen.push('');
      } else if (token === '\r') {
        this.column = 0;
      } else if (match[3] !== undefined) {
        this.control(match[1] === '?', match[2], match[3]);
      } else if (!token.startsWith('\x1b')) {
        const line = this.screen[this.row].padEnd(this.column);
        this.screen[this.row] = line.slice(0, this.column) + token + line.slice(this.column + token.length);
        this.column += token.length;
      }
    }
    return true;
  }

  /** The lines with text, trailing spaces trimmed. */
  get visible(): string[] {
    return this.screen.map((line) => line.trimEnd()).filter((line) => line !== '');
  }

  private control(privateMode: boolean, args: string, command: string): void {
    if (privateMode) return; // cursor visibility, line wrapping
    const n = args === '' ? 1 : Number(args.split(';')[0]);
    switch (command) {
      case 'A':
        this.row = Math.max(0, this.row - n);
        break;
      case 'B':
        this.row += n;
        while (this.screen.length <= this.row) this.screen.push('');
        break;
      case 'C':
        this.column += n;
        break;
      case 'D':
        this.column = Math.max(0, this.column - n);
        break;
      case 'G':
        this.column = n - 1;
        break;
      case 'K': {
        const mode = args === '' ? 0 : Number(args);
        const line = this.screen[this.row];
        this.screen[this.row] = mode === 0 ? line.slice(0, this.column) : mode === 1 ? ' '.repeat(this.column) + line.slice(this.column) : '';
        break;
      }
      case 'J':
        this.screen[this.row] = this.screen[this.row].slice(0, this.column);
        this.screen.splice(this.row + 1);
        break;
      default:
        throw new Error(`the fake terminal does not know ESC[${args}${command}`);
    }
  }
}

/** The console logger's lines, written to the terminal. */
function terminalLogger(terminal: FakeTerminal): Logger & { lines: string[] } {
  const lines: string[] = [];
  const emit = (level: LogLevel) => (message: string) => {
    lines.push(message);
    terminal.write(`[${level.toUpperCase()}] ${message}\n`);
  };
  return { lines, debug: emit('debug'), info: emit('info'), warning: emit('warning'), error: emit('error') };
}

describe('ProgressDisplay on a terminal', () => {
  let now = 0;
  const clock = () => now;
  const displays: ProgressDisplay[] = [];
  // A display left drawing keeps its redraw timer running.
  afterEach(() => displays.forEach((d) => d.stop()));
  const newDisplay = (terminal: FakeTerminal) => {
    const display = new ProgressDisplay(terminal, clock);
    displays.push(display);
    return display;
  };

  it('gives steps per second and the time left', () => {
    expect(rateAndTimeLeft(500, 500, 2000)).toEqual({ speed: '250', left: '02s' });
    expect(rateAndTimeLeft(100, 30_000, 1000)).toEqual({ speed: '100', left: '05m00s' });
    expect(rateAndTimeLeft(0, 100, 1000)).toEqual({ speed: '0', left: '--' });
  });

  it('shows the waiting line with a spinner and the time waited', () => {
    expect(waitingLine(5004, 0)).toBe('Listening on port 5004: press Play in the Unity Editor ⠋ 0s');
    expect(waitingLine(5004, 12_150)).toBe('Listening on port 5004: press Play in the Unity Editor ⠙ 12s');
    const terminal = new FakeTerminal();
    const display = newDisplay(terminal);
    now = 1000;
    display.waitForEditor(5004);
    now = 3_300;
    display.redraw();
    display.stop();
    expect(terminal.written).toContain('Listening on port 5004: press Play in the Unity Editor ⠸ 2s');
    // Stopping clears the live line.
    expect(terminal.visible).toEqual([]);
  });

  it('draws a line per behavior in place, and keeps log lines whole above it', () => {
    const terminal = new FakeTerminal();
    const display = newDisplay(terminal);
    const inner = terminalLogger(terminal);
    const logger = display.logger(inner);
    now = 0;
    display.waitForEditor(5004);
    logger.info('Listening on port 5004. Start training by pressing the Play button in the Unity Editor.');
    display.redraw();
    expect(terminal.visible).toEqual([
      '[INFO] Listening on port 5004. Start training by pressing the Play button in the Unity Editor.',
      'Listening on port 5004: press Play in the Unity Editor ⠋ 0s',
    ]);

    display.update(new Map([['3DBall', { step: 0, maxSteps: 1000 }], ['Basic', { step: 0, maxSteps: 400 }]]));
    now = 2000;
    display.update(new Map([['3DBall', { step: 500, maxSteps: 1000 }], ['Basic', { step: 100, maxSteps: 400 }]]));
    logger.info('3DBall. Step: 500. Time Elapsed: 2.000 s. Mean Reward: 1.000. Std of Reward: 0.100. Training.');
    logger.warning('Something to know.');
    display.redraw();
    const screen = terminal.visible;
    expect(screen.slice(0, 3)).toEqual([
      '[INFO] Listening on port 5004. Start training by pressing the Play button in the Unity Editor.',
      '[INFO] 3DBall. Step: 500. Time Elapsed: 2.000 s. Mean Reward: 1.000. Std of Reward: 0.100. Training.',
      '[WARNING] Something to know.',
    ]);
    expect(screen).toHaveLength(5);
    expect(screen[3]).toBe('3DBall [###############---------------] 500/1000 steps | 250 steps/s | ETA 02s');
    expect(screen[4]).toBe('Basic [########----------------------] 100/400 steps | 50 steps/s | ETA 06s');

    display.stop();
    expect(terminal.visible).toHaveLength(3);
    logger.info('Saved the final model.');
    expect(terminal.visible.at(-1)).toBe('[INFO] Saved the final model.');
    expect(inner.lines).toHaveLength(4);
  });
});

describe('ProgressDisplay elsewhere (piped output, CI, tests)', () => {
  it('writes nothing and passes log lines on to the inner logger', () => {
    const written: string[] = [];
    const pipe: ProgressStream = { isTTY: false, write: (text) => written.push(text) };
    const display = new ProgressDisplay(pipe);
    const inner = memoryLogger();
    const logger = display.logger(inner);
    display.waitForEditor(5004);
    display.update(new Map([['3DBall', { step: 10, maxSteps: 100 }]]));
    display.redraw();
    logger.info('a line');
    display.stop();
    expect(display.active).toBe(false);
    expect(written).toEqual([]);
    expect(inner.lines).toEqual([{ level: 'info', message: 'a line' }]);
  });
});
