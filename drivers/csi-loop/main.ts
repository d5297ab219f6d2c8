/**
 * Entry point of `npm run csi-driver` (node --import tsx drivers/csi-loop/main.ts).
 * Exit codes: 0 after --help or a clean SIGTERM/SIGINT shutdown, 2 for a bad flag, 1 when the
 * driver cannot start.
 */
import { isUsageError, parseArgs, USAGE } from './args.ts';
import { startCsiLoopDriver } from './driver.ts';

async function main(): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs(process.argv.slice(2));
  } catch (err) {
    if (isUsageError(err)) {
      process.stderr.write(`csi-loop: ${err.message}\n\n${USAGE}`);
      return 2;
    }
    throw err;
  }
  if (parsed.kind === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  const driver = await startCsiLoopDriver(parsed.options);
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  await driver.close();
  return 0;
}

main().then(
  (code) => {
    process.exit(code);
  },
  (err: unknown) => {
    process.stderr.write(`csi-loop: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
