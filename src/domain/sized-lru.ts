/**
 * A least-recently-used map bounded by the total size of its values (the caller says
 * what a value's size is, e.g. its length in characters). Used for the content-keyed
 * caches: validation answers and list responses.
 */
export class SizedLru<V> {
  private readonly entries = new Map<string, { value: V; size: number }>();
  private used = 0;
  hits = 0;
  misses = 0;

  /**
   * `keepNewest`: the value set last always stays, even when it alone is over the bound (the
   * map then holds it alone) — for a cache whose misses are costly enough that one value too
   * large to fit must still not be recomputed on every use.
   */
  constructor(
    private maxSize: number,
    private readonly options: { keepNewest?: boolean } = {},
  ) {}

  /** The value, if there is one that `usable` accepts (a value it refuses counts as a miss). */
  get(key: string, usable: (value: V) => boolean = () => true): V | undefined {
    const entry = this.entries.get(key);
    if (!entry || !usable(entry.value)) {
      this.misses++;
      return undefined;
    }
    this.entries.delete(key);
    this.entries.set(key, entry);
    this.hits++;
    return entry.value;
  }

  set(key: string, value: V, size: number): void {
    this.delete(key);
    if (size > this.maxSize && !this.options.keepNewest) return;
    this.entries.set(key, { value, size });
    this.used += size;
    this.evict();
  }

  delete(key: string): void {
    const previous = this.entries.get(key);
    if (!previous) return;
    this.entries.delete(key);
    this.used -= previous.size;
  }

  clear(): void {
    this.entries.clear();
    this.used = 0;
    this.hits = 0;
    this.misses = 0;
  }

  resize(maxSize: number): void {
    this.maxSize = Math.max(0, Math.floor(maxSize));
    this.evict();
  }

  stats(): { entries: number; size: number; maxSize: number; hits: number; misses: number } {
    return { entries: this.entries.size, size: this.used, maxSize: this.maxSize, hits: this.hits, misses: this.misses };
  }

  /** Oldest out first while over the bound (with keepNewest, never the last one). */
  private evict(): void {
    for (const [key, entry] of this.entries) {
      if (this.used <= this.maxSize || (this.options.keepNewest && this.entries.size === 1)) break;
      this.entries.delete(key);
      this.used -= entry.size;
    }
  }
}
