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
/** A row's scroll distance: the bar moves by rows, whatever the page's drawn height. */
const ROW_PX = 30;

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

  /** The bar's length: one page's height, and a row's distance for each row past it. */
  private size(): void {
    const past = Math.max(0, this.rows.length - PAGE);
    this.spacer.style.height = `${past * ROW_PX + this.scroller.clientHeight}px`;
  }

  moveTo(offset: number): void {
    const max = Math.max(0, this.rows.length - PAGE);
    this.offset = Math.max(0, Math.min(max, Math.round(offset)));
    this.scroller.scrollTop = this.offset * ROW_PX;
    this.emit();
  }

  private fromScroll(): void {
    const max = Math.max(0, this.rows.length - PAGE);
    const offset = Math.min(max, Math.round(this.scroller.scrollTop / ROW_PX));
    if (offset === this.offset) return;
    this.offset = offset;
    this.emit();
  }

  private emit(): void {
    const page = this.rows.slice(this.offset, this.offset + PAGE);
    const hosts = this.rows.filter((r) => !r.header).length;
    this.position.hidden = this.rows.length <= PAGE;
    this.position.textContent =
      this.rows.length <= PAGE
        ? ''
        : `rows ${this.offset + 1}–${this.offset + page.length} of ${this.rows.length} (${hosts} hosts)`;
    this.onChange(page);
  }
}
