/**
 * A port a lower module provides and a higher module fills when it is built. Nest's
 * wiring runs down the floors as the imports do, so the lower module cannot import the
 * one that implements what it needs; the higher one imports it and registers itself.
 */
export class Port<T> {
  private implementation: T | null = null;

  constructor(private readonly description: string) {}

  register(implementation: T): void {
    this.implementation = implementation;
  }

  protected get target(): T {
    if (this.implementation === null) {
      throw new Error(`${this.description} is not registered: its module is not imported`);
    }
    return this.implementation;
  }
}
