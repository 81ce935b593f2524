/** The tontine's states and actions (own file: the errors and the lifecycle both name them). */
export type TontineStatus = 'forming' | 'active' | 'completed' | 'canceled';

export type TontineAction = 'invite' | 'join' | 'leave' | 'start' | 'contribute' | 'cancel';
