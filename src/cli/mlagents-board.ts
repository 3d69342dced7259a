#!/usr/bin/env node
/**
 * mlagents-board: the training board for a results folder, in the browser, without Python.
 *
 *   npx mlagents-board                 # the folder ./results, on http://localhost:6006/
 *   npx mlagents-board runs --port 6007
 */
import { Command, InvalidArgumentError } from 'commander';
import { consoleLogger } from '../common/logger';
import { DEFAULT_BOARD_PORT } from '../config/command-line';
import { startBoard, type Board } from '../board/server';

interface BoardArgs {
  resultsDir: string;
  port: number;
  bindAddress: string;
}

function port(text: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 0 || value > 65535) throw new InvalidArgumentError(`expected a port from 0 to 65535, got "${text}"`);
  return value;
}

export function parseBoardArgs(argv: readonly string[]): BoardArgs {
  const program = new Command('mlagents-board')
    .description('Serve the training board of a results folder (TensorBoard summaries, checkpoints, configuration, timers).')
    .argument('[results-dir]', 'the folder mlagents-learn writes its runs to', 'results')
    .option('--port <port>', 'port of the board (0: any free one)', port, DEFAULT_BOARD_PORT)
    .option('--bind-address <host>', 'address the board listens on (localhost: this machine only)', 'localhost')
    .allowExcessArguments(false)
    .exitOverride();
  program.parse(argv, { from: 'user' });
  const options = program.opts<{ port: number; bindAddress: string }>();
  return { resultsDir: program.args[0] ?? 'results', port: options.port, bindAddress: options.bindAddress };
}

export async function runBoard(argv: readonly string[]): Promise<Board> {
  const args = parseBoardArgs(argv);
  const logger = consoleLogger();
  const board = await startBoard({ resultsDir: args.resultsDir, port: args.port, host: args.bindAddress, logger });
  logger.info(`The board of ${board.folder.root} is at ${board.url} (Ctrl-C ends it).`);
  return board;
}

if (require.main === module) {
  runBoard(process.argv.slice(2)).then(
    (board) => {
      const stop = () => void board.close().then(() => process.exit(0));
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
    },
    (error: Error & { exitCode?: number }) => {
      // commander printed the usage already for --help and bad flags.
      if (error.name === 'CommanderError') process.exit(error.exitCode ?? 2);
      process.stderr.write(`[ERROR] ${error.message}\n`);
      process.exit(1);
    },
  );
}
