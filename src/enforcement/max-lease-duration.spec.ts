import { loadConfig } from '../config/config.js';
import { checkMaxLeaseDuration } from './max-lease-duration.js';

const settings = (env: Record<string, string>) => loadConfig(env).enforcement;
const at = (iso: string) => new Date(`${iso}Z`);
const day = { start: at('2030-01-01T00:00:00'), end: at('2030-01-02T00:00:00') };

describe('checkMaxLeaseDuration', () => {
  it('should allow any lease when the limit is unset', () => {
    expect(() => checkMaxLeaseDuration(settings({}), 'p', day)).not.toThrow();
  });

  it('should allow a lease exactly as long as the limit', () => {
    const s = settings({ MAX_LEASE_DURATION_SECONDS: '86400' });
    expect(() => checkMaxLeaseDuration(s, 'p', day)).not.toThrow();
  });

  it("should refuse a longer lease with Blazar's message when the project is not exempt", () => {
    const s = settings({ MAX_LEASE_DURATION_SECONDS: '3600' });
    expect(() => checkMaxLeaseDuration(s, 'p', day)).toThrow(
      'Lease duration of 86400 seconds must be less than or equal to the maximum lease ' +
        'duration of 3600 seconds.',
    );
  });

  it('should allow a longer lease when the project is exempt', () => {
    const s = settings({
      MAX_LEASE_DURATION_SECONDS: '3600',
      MAX_LEASE_DURATION_EXEMPT_PROJECTS: 'a, p',
    });
    expect(() => checkMaxLeaseDuration(s, 'p', day)).not.toThrow();
  });
});
