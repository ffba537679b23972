import type { FastifyBaseLogger } from 'fastify';
import type { OpenStoreHooks } from './store/open-store.js';

/**
 * The store's events as the broker's log tells them; a store that stopped taking writes is also
 * told to `onLost`, which ends the broker.
 */
export function loggedStoreHooks(log: FastifyBaseLogger, onLost: (error: unknown) => void): OpenStoreHooks {
  // A standby polls the lease several times a second: it says so once per holder.
  let lastHolder = '';
  return {
    onWriteError: (error) => log.error({ err: error }, 'store write failed'),
    onWaitingForLease: (holder) => {
      const named = `${holder.owner} (epoch ${holder.epoch})`;
      if (named === lastHolder) return;
      lastHolder = named;
      log.warn(
        `the store is held by broker ${named} for ${holder.expiresInMs} ms more: waiting as a standby`,
      );
    },
    onWarmCopyLoaded: (elapsedMs) =>
      log.info(
        `local copy of the store loaded in ${Math.round(elapsedMs)} ms: following its changes, ready to take over`,
      ),
    onWarmCopyError: (error) =>
      log.warn({ err: error }, 'could not bring the local copy of the store up to date; trying again'),
    onLost: (error) => {
      log.error({ err: error }, 'the store stopped taking writes: closing the broker');
      onLost(error);
    },
  };
}
