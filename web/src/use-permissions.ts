import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import { permissionsOf, type Permissions } from './lib/permissions';

/** The signed-in key's permissions, provided by the app shell once GET /backend/api/keys/me answers. */
export const PermissionsContext = createContext<Permissions>(permissionsOf(null));

export function usePermissions(): Permissions {
  return useContext(PermissionsContext);
}
