package ingest

import (
	"context"

	"largo"
)

// Where maps a name as a request spells it to the name of the entry the
// store acts on: its folder reached through whatever links lead there
// (gate.Gate.Where, for an operation on the entry). It returns name
// itself where it cannot tell.
type Where func(ctx context.Context, name string) string

// PhysicalQuota returns q asked about the entries the store acts on
// rather than names as spelled (where): a write through a link to a
// folder counts, and is judged, under the quotas of the folder it
// reaches, as one to that folder's own name is. Without it a link to a
// folder with a quota would write past the quota, which would learn of
// the bytes only at its next pass over the store.
func PhysicalQuota(q Quota, where Where) Quota { return physicalQuota{q, where} }

type physicalQuota struct {
	q     Quota
	where Where
}

func (p physicalQuota) Admit(ctx context.Context, name string, size int64, hold bool, was *largo.Info) (Claim, error) {
	return p.q.Admit(ctx, p.where(ctx, name), size, hold, was)
}

func (p physicalQuota) AdmitBytes(ctx context.Context, name string) (Claim, error) {
	return p.q.AdmitBytes(ctx, p.where(ctx, name))
}

func (p physicalQuota) Forget(ctx context.Context, name string) {
	p.q.Forget(ctx, p.where(ctx, name))
}

func (p physicalQuota) Renamed(ctx context.Context, from, to string) {
	p.q.Renamed(ctx, p.where(ctx, from), p.where(ctx, to))
}

func (p physicalQuota) KeepBeside(ctx context.Context, name string, size int64) error {
	return p.q.KeepBeside(ctx, p.where(ctx, name), size)
}

func (p physicalQuota) FolderMade(ctx context.Context, name string) {
	p.q.FolderMade(ctx, p.where(ctx, name))
}

func (p physicalQuota) Carried(ctx context.Context, from, to string) {
	p.q.Carried(ctx, p.where(ctx, from), p.where(ctx, to))
}

func (p physicalQuota) AdmitMove(ctx context.Context, from, to string) error {
	return p.q.AdmitMove(ctx, p.where(ctx, from), p.where(ctx, to))
}
