import { useEffect, useState } from 'preact/hooks';
import { type AccessState, accessState, onAccessChange } from './auth';

/** The access state, re-rendering when a login, a 401 or a refused write changes it. */
export function useAccess(): AccessState {
  const [state, setState] = useState(accessState);
  useEffect(() => onAccessChange(setState), []);
  return state;
}
