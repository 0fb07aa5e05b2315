package delivery

import "time"

// Ready is what the caller does, accumulated since the last Advance, in
// this order: log Notes, acknowledge through AckThrough, set SetAside aside,
// persist Strikes if SaveStrikes, drop the connection if Drop; and what it
// asked for (Send, Look, Replan); and the State. Its slices
// are valid until Advance.
type Ready struct {
	Notes       []Note
	AckThrough  uint64 // acknowledge the spool through this sequence; 0: nothing
	Proven      bool   // the acknowledgement is proof of handling: count it delivered, else unproven
	SetAside    uint64 // move this sequence (the oldest pending) to the dead letters, then step SetAside
	SaveStrikes bool   // Strikes changed: persist them
	Drop        Drop   // drop the connection

	Send   Send          // Next: what to write, if SendOK
	SendOK bool          //
	Look   time.Duration // Park, Recheck: look at the socket after this while idle (0: no look)
	Replan bool          // Recheck: the idle's plan is out of date: wake it

	State
}

// State is delivery's state as of the last Step, which the caller acts on
// until the next Ready.
type State struct {
	Acked     uint64        // acknowledged or set aside through
	Strikes   Strikes       // the suspect, to persist
	Connected bool          // delivery has a connection
	Isolating bool          // the next write carries one event
	Suspect   uint64        // the event to write alone once all before it is handled; 0: none
	Unread    int           // the last SIOCOUTQ reading on this connection
	InFlight  int           // payload bytes written on this connection and not known read
	Frozen    bool          // the receiver reads nothing, connected
	Reading   bool          // written bytes wait to be read
	WantsFin  bool          // look for the receiver's FIN (TCP) before Read
	Wakes     bool          // a Tick has something to do at Wake
	Wake      time.Time     //
	Poll      time.Duration // while Reading: how long until the next look at the socket
	DialAt    time.Time     // dial no sooner
}

// Drop is why delivery drops the connection.
type Drop int

const (
	DropNone  Drop = iota
	DropStuck      // the receiver stopped inside an event: abandon the connection
	DropFin        // the receiver's FIN ends it (step Failed with CauseFin)
)

// Note is something the caller logs.
type Note struct {
	Kind  NoteKind
	Seq   uint64
	N     int
	Since time.Time
}

// NoteKind is a Note's kind.
type NoteKind int

const (
	NoteStrike    NoteKind = iota + 1 // Seq earned strike N
	NoteFrozen                        // the receiver read nothing since Since
	NoteCrashLoop                     // the receiver failed N times in a row before handling anything
	NoteStuck                         // it stopped inside Seq: cannot read it
	NoteSlow                          // it read nothing since Since, for WarnAfter
)

// Send is what the caller writes next: Max events from From (0: the oldest
// pending), or the witness alone if ResendWitness is not 0.
type Send struct {
	From          uint64
	Max           int
	ResendWitness uint64
}

// Ready returns what to do since the last Advance.
func (d *Delivery) Ready() Ready { return d.rd }

// Advance records that the last Ready was carried out: what it asked for is
// forgotten, its slices reused.
func (d *Delivery) Advance() {
	d.rd = Ready{Notes: d.rd.Notes[:0], State: d.rd.State}
}

// state refreshes the Ready's state at now.
func (d *Delivery) state(now time.Time) {
	r := &d.rd.State
	r.Acked, r.Strikes, r.Isolating, r.Suspect = d.acked, d.strikes, d.isolating(), d.suspect
	r.WantsFin, r.DialAt = d.wantsFin(), d.dial.at
	r.Connected, r.Unread, r.Frozen, r.Reading, r.InFlight, r.Poll = false, 0, false, false, 0, 0
	if c := d.conn; c != nil {
		r.Connected, r.Unread, r.Frozen, r.Reading = true, c.unread, c.frozen, !c.allRead()
		r.InFlight = int(c.written - c.read)
		r.Poll = idleCheck
		if !c.frozen {
			r.Poll = pollAfter(now.Sub(later(c.lastMove, c.lastWrite)))
		}
	}
	r.Wake, r.Wakes = d.wakeAt()
}
