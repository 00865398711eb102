// Points at which a busy event loop passes by: the HTTP events Node and undici publish on their diagnostics
// channels (a request arriving, a response finished, a request to an engine made, its answer's headers and its
// end). A store that waits for another thread looks at these points as well as at its own calls and the loop's
// check phase: at concurrency 32 an engine batch's answers land together, the loop's turn takes milliseconds,
// and each of these events comes many times within it.

import { subscribe, unsubscribe } from 'node:diagnostics_channel';

const CHANNELS = [
  'http.server.request.start',
  'http.server.response.finish',
  'undici:request:create',
  'undici:request:headers',
  'undici:request:trailers',
] as const;

/** Calls `look` at each of those events until the returned function is called. `look` must be cheap. */
export function atEventLoopPasses(look: () => void): () => void {
  const listener = () => look();
  for (const name of CHANNELS) subscribe(name, listener);
  return () => {
    for (const name of CHANNELS) unsubscribe(name, listener);
  };
}
