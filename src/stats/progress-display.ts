/**
 * The live status line of mlagents-learn in a terminal: while it waits for the Unity Editor, a
 * spinner and the time waited; while it trains, one line per behavior with its step against
 * max_steps as a bar, steps per second and the time left. The lines are redrawn in place, and log
 * lines are written above them (the live lines are cleared first), so log lines stay whole.
 *
 * It draws only on a terminal: on piped output, in CI and in tests nothing is written, and log
 * lines go to the logger they would go to anyway.
 *
 * The drawing is cli-progress's (MultiBar): a widely used, dependency-light library that redraws
 * several lines in place, formats the bar and writes nothing when its stream is not a TTY. Its own
 * log() leaves unchanged lines undrawn after a message, so a log line here clears the live lines,
 * goes to the run's logger as usual, and the lines are drawn again below it.
 */
import { Format, MultiBar, SingleBar } from 'cli-progress';
import type { Logger, LogLevel } from '../common/logger';

/** What the display writes to: a TTY write stream, or a test's stand-in. */
export interface ProgressStream {
  readonly isTTY?: boolean;
  readonly columns?: number;
  write(text: string): unknown;
}

/** A behavior's progress as its trainer reports it. */
export interface BehaviorProgress {
  readonly step: number;
  readonly maxSteps: number;
}

const SPINNER_FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const SPINNER_FRAMES_PER_SECOND = 10;
const REDRAWS_PER_SECOND = 10;
const BAR_WIDTH = 30;

/** The waiting line: "Listening on port 5004: press Play in the Unity Editor ⠹ 12s". */
export function waitingLine(port: number, elapsedMs: number): string {
  const frame = SPINNER_FRAMES[Math.floor((elapsedMs / 1000) * SPINNER_FRAMES_PER_SECOND) % SPINNER_FRAMES.length];
  return `Listening on port ${port}: press Play in the Unity Editor ${frame} ${Math.floor(elapsedMs / 1000)}s`;
}

/** Steps per second and time left, from the steps done since the display first saw the behavior. */
export function rateAndTimeLeft(stepsDone: number, stepsLeft: number, elapsedMs: number): { speed: string; left: string } {
  const perSecond = elapsedMs > 0 ? (stepsDone * 1000) / elapsedMs : 0;
  if (!(perSecond > 0)) return { speed: '0', left: '--' };
  const left = Format.TimeFormat(Math.round(Math.max(0, stepsLeft) / perSecond), { autopaddingChar: '0' }, 1);
  return { speed: String(Math.round(perSecond)), left };
}

interface BehaviorBar {
  /** Where the behavior started when the display first saw it (a resumed run starts from its step). */
  readonly firstStep: number;
  readonly since: number;
  step: number;
  maxSteps: number;
  bar: SingleBar | null;
}

export class ProgressDisplay {
  /** Whether the stream is a terminal: otherwise the display does nothing. */
  readonly active: boolean;
  /** The live lines now on screen; null when none is shown. */
  private lines: MultiBar | null = null;
  /** The waiting line's port and start, while it shows. */
  private waiting: { port: number; since: number } | null = null;
  private readonly behaviors = new Map<string, BehaviorBar>();

  constructor(
    private readonly stream: ProgressStream,
    private readonly clock: () => number = Date.now,
  ) {
    this.active = stream.isTTY === true;
  }

  /** Shows the waiting line until the first behavior's progress arrives (or stop). */
  waitForEditor(port: number): void {
    if (!this.active) return;
    this.waiting = { port, since: this.clock() };
    this.draw();
  }

  /** Shows each behavior's step; the first call replaces the waiting line. */
  update(progress: ReadonlyMap<string, BehaviorProgress>): void {
    if (!this.active || progress.size === 0) return;
    let added = false;
    for (const [name, { step, maxSteps }] of progress) {
      let entry = this.behaviors.get(name);
      if (entry === undefined) {
        entry = { firstStep: step, since: this.clock(), step, maxSteps, bar: null };
        this.behaviors.set(name, entry);
        added = true;
      }
      entry.step = step;
      entry.maxSteps = maxSteps;
      entry.bar?.update(Math.min(step, maxSteps), this.payload(name, entry));
    }
    if (added) {
      this.waiting = null;
      this.draw();
    }
  }

  /** Redraws the live lines now (they are also redrawn REDRAWS_PER_SECOND times a second). */
  redraw(): void {
    this.lines?.update();
  }

  /**
   * A logger that writes above the live lines while they show, and to `inner` otherwise. Debug
   * lines are left out while the lines show, as the console logger leaves them out.
   */
  logger(inner: Logger): Logger {
    const emit = (level: LogLevel, message: string) => {
      if (this.lines === null) {
        inner[level](message);
        return;
      }
      this.clear();
      inner[level](message);
      this.draw();
    };
    return {
      debug: (m) => emit('debug', m),
      info: (m) => emit('info', m),
      warning: (m) => emit('warning', m),
      error: (m) => emit('error', m),
    };
  }

  /** Removes the live lines (at the end of the run, before the last messages). */
  stop(): void {
    this.clear();
    this.waiting = null;
    this.behaviors.clear();
  }

  /** Draws the live lines anew where the cursor is: the waiting line, or a line per behavior. */
  private draw(): void {
    this.clear();
    if (this.waiting === null && this.behaviors.size === 0) return;
    const lines = this.newLines();
    const waiting = this.waiting;
    if (waiting !== null) {
      lines.create(1, 0, {}, { format: () => waitingLine(waiting.port, this.clock() - waiting.since) });
    }
    for (const [name, entry] of this.behaviors) {
      entry.bar = lines.create(entry.maxSteps, Math.min(entry.step, entry.maxSteps), this.payload(name, entry));
    }
    lines.update();
    this.lines = lines;
  }

  /** Erases the live lines, leaving the cursor where they began. */
  private clear(): void {
    this.lines?.stop();
    this.lines = null;
  }

  private payload(name: string, entry: BehaviorBar): { behavior: string; speed: string; left: string } {
    const timing = rateAndTimeLeft(entry.step - entry.firstStep, entry.maxSteps - entry.step, this.clock() - entry.since);
    return { behavior: name, ...timing };
  }

  private newLines(): MultiBar {
    return new MultiBar({
      stream: this.stream as NodeJS.WritableStream,
      fps: REDRAWS_PER_SECOND,
      format: '{behavior} [{bar}] {value}/{total} steps | {speed} steps/s | ETA {left}',
      barsize: BAR_WIDTH,
      barCompleteChar: '#',
      barIncompleteChar: '-',
      clearOnComplete: true,
      // Cut at the terminal's width rather than turning its line wrapping off: nothing to restore
      // if the process exits while the lines show.
      linewrap: true,
      hideCursor: false,
      // The run's own SIGINT handler saves the models; the display is stopped when the run ends.
      gracefulExit: false,
    });
  }
}
