/**
 * The short-lived cache in front of the agent's TokenReviews and SubjectAccessReviews
 * (webhook-auth.ts): answers are kept for a per-answer TTL on the injected clock, the number of
 * entries is bounded (least recently used evicted first), and concurrent lookups of a key that
 * is being reviewed share that one review instead of starting their own.
 *
 * Contracts:
 * - Only answers are cached. A review that fails (rejects) is handed to everyone waiting on it
 *   and then forgotten, so the next lookup reviews again.
 * - A TTL of 0 (or less) means "do not keep": the answer still goes to the lookups that shared
 *   the review, but the next lookup after it reviews again.
 * - An entry is fresh while `now < storedAt + ttl`: at exactly `storedAt + ttl` it is gone.
 * - Keys are opaque strings chosen by the caller; they must not be credentials (the caller
 *   hashes tokens, see {@link createKeyHasher}).
 */
import { createHmac, randomBytes } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { Clock } from '../../lib/clock/clock.ts';

interface Entry<V> {
  value: V;
  expiresAt: number;
}

/**
 * A bounded TTL cache with shared in-flight loads. The bound and the recency order are
 * `lru-cache`'s; the expiry is checked here on the injected clock (lru-cache's own TTL reads a
 * clock of its own and keeps an entry up to and including `storedAt + ttl`).
 */
export class ReviewCache<V> {
  private readonly entries: LRUCache<string, Entry<V>>;
  private readonly inFlight = new Map<string, Promise<V>>();

  constructor(
    private readonly clock: Clock,
    /** The most entries kept; a new key beyond it evicts the least recently used one. */
    maxEntries: number,
  ) {
    if (!Number.isInteger(maxEntries) || maxEntries < 1) throw new RangeError(`maxEntries must be a positive integer, got ${maxEntries}`);
    this.entries = new LRUCache({ max: maxEntries });
  }

  /** Entries held now (expired ones not yet swept included). */
  get size(): number {
    return this.entries.size;
  }

  /** Reviews in flight now. */
  get pending(): number {
    return this.inFlight.size;
  }

  /** Whether `key` has a fresh answer or a review in flight (a lookup would not start a review). */
  covers(key: string): boolean {
    return this.inFlight.has(key) || this.fresh(key) !== undefined;
  }

  /**
   * The fresh cached answer for `key`; else the review in flight for it; else starts `review`
   * (in a later microtask, so a synchronous throw is a rejection too) and keeps its answer for
   * `ttlMs(answer)` milliseconds.
   */
  load(key: string, review: () => Promise<V>, ttlMs: (answer: V) => number): Promise<V> {
    const cached = this.fresh(key);
    if (cached !== undefined) return Promise.resolve(cached.value);
    const shared = this.inFlight.get(key);
    if (shared !== undefined) return shared;
    const started = Promise.resolve()
      .then(review)
      .then((answer) => {
        this.store(key, answer, ttlMs(answer));
        return answer;
      })
      .finally(() => {
        this.inFlight.delete(key);
      });
    this.inFlight.set(key, started);
    return started;
  }

  private fresh(key: string): Entry<V> | undefined {
    const entry = this.entries.get(key); // most recently used now
    if (entry === undefined) return undefined;
    if (this.clock.now() >= entry.expiresAt) {
      this.entries.delete(key);
      return undefined;
    }
    return entry;
  }

  private store(key: string, value: V, ttlMs: number): void {
    this.entries.delete(key);
    if (!(ttlMs > 0)) return;
    this.entries.set(key, { value, expiresAt: this.clock.now() + ttlMs }); // evicts the least recently used beyond maxEntries
  }
}

/**
 * Derives cache keys that do not keep what they are derived from: an HMAC-SHA256 under a key
 * drawn per instance, so a raw token is never held in a cache and a key seen in a heap dump
 * cannot be checked against a guessed token offline. Equal inputs give equal keys within one
 * instance only.
 */
export function createKeyHasher(): (input: string) => string {
  const secret = randomBytes(32);
  return (input) => createHmac('sha256', secret).update(input, 'utf8').digest('base64url');
}
