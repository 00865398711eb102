import { DefaultLogger, Runtime } from '@temporalio/worker';

// Worker lifecycle INFO lines drown test output; warnings and errors still show.
try {
  Runtime.install({ logger: new DefaultLogger('WARN') });
} catch {
  // Already installed in this process (a second setup file run): keep the first.
}
