// The child of client-process.ts: runs the blocks it is sent and answers with their timings.

import { runChatLanes } from './chat-client.js';
import type { ClientBlock, ClientBlockResult } from './client-process.js';

async function runBlock(block: ClientBlock): Promise<ClientBlockResult> {
  try {
    return { id: block.id, lanes: await runChatLanes(block.lanes) };
  } catch (error) {
    return { id: block.id, error: String(error) };
  }
}

process.on('message', (block: ClientBlock) => {
  void runBlock(block).then((result) => process.send?.(result));
});
// Ready: the parent waits for this before sending its first block.
process.send?.({ ready: true });
// Exits with the parent, even when the parent is killed.
process.on('disconnect', () => process.exit(0));
