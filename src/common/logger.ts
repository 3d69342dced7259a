/**
 * The one logging interface of the project: levels as upstream's logging_util, lines in its
 * `[INFO] message` form. Modules take a Logger so that tests and the CLI choose where lines go.
 */
export type LogLevel = 'debug' | 'info' | 'warning' | 'error';

export interface Logger {
  debug(message: string): void;
  info(message: string): void;
  warning(message: string): void;
  error(message: string): void;
}

const LEVEL_ORDER: Record<LogLevel, number> = { debug: 0, info: 1, warning: 2, error: 3 };

/** Writes `[LEVEL] message` lines to stderr (warnings and errors) or stdout, from `minimum` up. */
export function consoleLogger(minimum: LogLevel = 'info'): Logger {
  const emit = (level: LogLevel, message: string) => {
    if (LEVEL_ORDER[level] < LEVEL_ORDER[minimum]) return;
    const line = `[${level.toUpperCase()}] ${message}\n`;
    (LEVEL_ORDER[level] >= LEVEL_ORDER.warning ? process.stderr : process.stdout).write(line);
  };
  return {
    debug: (m) => emit('debug', m),
    info: (m) => emit('info', m),
    warning: (m) => emit('warning', m),
    error: (m) => emit('error', m),
  };
}

/** Keeps every line in memory; for tests and for callers that show lines their own way. */
export function memoryLogger(): Logger & { lines: Array<{ level: LogLevel; message: string }> } {
  const lines: Array<{ level: LogLevel; message: string }> = [];
  return {
    lines,
    debug: (message) => lines.push({ level: 'debug', message }),
    info: (message) => lines.push({ level: 'info', message }),
    warning: (message) => lines.push({ level: 'warning', message }),
    error: (message) => lines.push({ level: 'error', message }),
  };
}
