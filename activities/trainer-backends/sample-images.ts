// A stored sample keeps its prompt's images as digests; a trainer needs their bytes. They are read from the
// sample store here, in the activity that sends the step, so image bytes never travel in a workflow payload.
import { imageStoreKey, type StoredImage } from '../../core/image-parts.js';
import type { SampleImageRef } from '../../core/types.js';
import type { SampleStore } from '../../store/sample-store.js';
import { trainerRefusal } from '../trainer-refusal.js';

/** The images' bytes in the refs' order; a missing or malformed one refuses the sample (by id). */
export async function loadSampleImages(
  store: SampleStore,
  sampleId: string,
  refs: readonly SampleImageRef[],
): Promise<StoredImage[]> {
  const loaded = new Map<string, Promise<StoredImage | undefined>>();
  return Promise.all(
    refs.map(async (ref) => {
      let image = loaded.get(ref.digest);
      if (image === undefined) {
        image = store.get<StoredImage>(imageStoreKey(ref.digest));
        loaded.set(ref.digest, image);
      }
      const stored = await image;
      if (typeof stored?.data !== 'string' || typeof stored.mediaType !== 'string')
        throw trainerRefusal(
          `image ${ref.digest} of sample ${sampleId} is not in the store (key ${imageStoreKey(ref.digest)})`,
          [sampleId],
        );
      return { mediaType: stored.mediaType, data: stored.data };
    }),
  );
}
