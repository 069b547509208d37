package main

import (
	"errors"
	"fmt"
	"net"
	"os"

	"largo/internal/activation"
)

// adminSocketName is the name (FileDescriptorName= in a systemd socket
// unit) of a handed-over socket meant for --admin-listen's endpoints.
const adminSocketName = "admin"

// handedOver holds the listening sockets a service manager handed over,
// if any: the one named admin for the admin endpoints, the other for the
// server.
type handedOver struct {
	main, admin net.Listener
}

// takeHandedOver takes the sockets handed over to this process (socket
// activation), which then stand in for --listen and --admin-listen. More
// than one socket for the server is a usage error.
func takeHandedOver(e *env) (*handedOver, error) {
	ls, err := activation.Listeners(e.getenv, os.Getpid())
	if err != nil {
		return nil, usageErr(fmt.Errorf("socket activation: %v", err))
	}
	h := &handedOver{}
	for _, l := range ls {
		slot := &h.main
		if l.Name == adminSocketName {
			slot = &h.admin
		}
		if *slot != nil {
			for _, l := range ls {
				l.Close()
			}
			return nil, usageErr(errors.New("socket activation: more than one socket for the server (name the admin socket \"admin\")"))
		}
		*slot = l.Listener
	}
	return h, nil
}

// listen returns the handed-over server socket, else a new one on addr.
func (h *handedOver) listen(addr string) (net.Listener, error) {
	if h.main != nil {
		return h.main, nil
	}
	return net.Listen("tcp", addr)
}

// listenAdmin returns the handed-over admin socket, else a new one on
// addr; nil when there is neither.
func (h *handedOver) listenAdmin(addr string) (net.Listener, error) {
	switch {
	case h.admin != nil:
		return h.admin, nil
	case addr == "":
		return nil, nil
	}
	return net.Listen("tcp", addr)
}

// Close closes the handed-over sockets (again, after a server closed them).
func (h *handedOver) Close() {
	for _, l := range []net.Listener{h.main, h.admin} {
		if l != nil {
			l.Close()
		}
	}
}
