/** The end of a fixture script that a test runs in a child process: exits 0 once `main` is done, else prints its error and exits 1. */
export function runFixture(main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (error) => {
      console.error(error);
      process.exit(1);
    },
  );
}
