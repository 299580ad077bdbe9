/**
 * Rows virtualised: the timeline holds only the rows in view (a page), and a scroll bar of
 * the whole list beside it moves that page. 1,000 hosts cost the same as 30 to draw.
 */
export interface Row {
  id: string;
  content: string;
  header: boolean;
}

export const PAGE = 20;

export class RowPager {
  private rows: Row[] = [];
  offset = 0;
  onChange: (rows: Row[]) => void = () => undefined;

  constructor(
    private readonly scroller: HTMLElement,
    private readonly spacer: HTMLElement,
    private readonly position: HTMLElement,
    wheelTarget: HTMLElement,
  ) {
    scroller.addEventListener('scroll', () => this.fromScroll());
    new ResizeObserver(() => this.size()).observe(scroller);
    // The wheel over the timeline scrolls rows (Ctrl+wheel zooms, the timeline's own).
    wheelTarget.addEventListener(
      'wheel',
      (e) => {
        if (e.ctrlKey || this.rows.length <= PAGE) return;
        if (Math.abs(e.deltaY) <= Math.abs(e.deltaX)) return;
        e.preventDefault();
        this.moveTo(this.offset + Math.sign(e.deltaY) * 3);
      },
      { passive: false, capture: true },
    );
  }

  set(rows: Row[]): void {
    this.rows = rows;
    this.offset = Math.min(this.offset, Math.max(0, rows.length - PAGE));
    this.scroller.hidden = rows.length <= PAGE;
    this.size();
    this.emit();
  }

  /** The bar's length: the whole list against one page of it. */
  private size(): void {
    const pages = Math.max(1, this.rows.length / PAGE);
    this.spacer.style.height = `${Math.round(pages * this.scroller.clientHeight)}px`;
  }

  moveTo(offset: number): void {
    const max = Math.max(0, this.rows.length - PAGE);
    this.offset = Math.max(0, Math.min(max, Math.round(offset)));
    const room = this.scroller.scrollHeight - this.scroller.clientHeight;
    if (max > 0) this.scroller.scrollTop = (this.offset / max) * room;
    this.emit();
  }

  private fromScroll(): void {
    const room = this.scroller.scrollHeight - this.scroller.clientHeight;
    const max = Math.max(0, this.rows.length - PAGE);
    const offset = room <= 0 ? 0 : Math.round((this.scroller.scrollTop / room) * max);
    if (offset === this.offset) return;
    this.offset = offset;
    this.emit();
  }

  private emit(): void {
    const page = this.rows.slice(this.offset, this.offset + PAGE);
    const hosts = this.rows.filter((r) => !r.header).length;
    this.position.textContent =
      this.rows.length <= PAGE
        ? `${hosts} hosts`
        : `rows ${this.offset + 1}–${this.offset + page.length} of ${this.rows.length} (${hosts} hosts)`;
    this.onChange(page);
  }
}
