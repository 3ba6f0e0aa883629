/** The User-Agent of every fetch of the service; its product token (before the `/`) is what robots.txt groups name. */
export const USER_AGENT = 'copilot-management-service/0.1';
