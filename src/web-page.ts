import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';

/** Where `scripts/build-ui.mjs` writes the page (the same from src/ and from dist/). */
export const WEB_PAGE_DIR = join(__dirname, '..', 'dist-ui');

/**
 * The same-origin policy the page keeps to: its own scripts and styles only (the timeline
 * sets inline style attributes, hence 'unsafe-inline' for styles), calls to this origin
 * only, never framed.
 */
const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * The web page at /ui/ (issue 28): static files, with no data in them. They are outside
 * the API's guards on purpose; every datum the page shows comes from the API with the
 * caller's own X-Auth-Token, so the page can show no more than the API gives that caller.
 */
export function serveWebPage(app: NestExpressApplication, dir = WEB_PAGE_DIR): void {
  app.use('/ui', (req: Request, res: Response, next: NextFunction) => {
    res.setHeader('Content-Security-Policy', CSP);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'no-referrer');
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    if (req.originalUrl === '/ui') return res.redirect(301, '/ui/');
    if (!existsSync(join(dir, 'index.html'))) {
      res
        .status(503)
        .type('text/plain')
        .send('The web page is not built: run `npm start` or `node scripts/build-ui.mjs`.\n');
      return;
    }
    next();
  });
  app.useStaticAssets(dir, { prefix: '/ui/', index: 'index.html', maxAge: 0 });
}
