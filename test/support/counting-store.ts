import { type CreateOptions, FileSampleStore } from '../../store/sample-store.js';

/** The real file store, counting the operations made on it (how much work a request does, not how long). */
export class CountingStore extends FileSampleStore {
  operations = 0;
  override put(key: string, value: unknown) {
    this.operations++;
    return super.put(key, value);
  }
  override putIfAbsent(key: string, value: unknown, options?: CreateOptions) {
    // Writes made together with the value count as writes of their own: the work is the same, only batched.
    this.operations += 1 + (options?.alongside?.length ?? 0);
    return super.putIfAbsent(key, value, options);
  }
  override get<T>(key: string) {
    this.operations++;
    return super.get<T>(key);
  }
  override list(prefix: string) {
    this.operations++;
    return super.list(prefix);
  }
  override delete(key: string) {
    this.operations++;
    return super.delete(key);
  }
}
