package stub_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/nrikit/nrikit/api"
	"github.com/nrikit/nrikit/stub"
	"github.com/nrikit/nrikit/stub/stubtest"
)

func TestRegisterBothOrders(t *testing.T) {
	for _, tc := range []struct {
		name  string
		order stubtest.Order
	}{
		{"nrikit", stubtest.NrikitOrder},
		{"upstream", stubtest.UpstreamOrder},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := stubtest.NewRuntime(t, stubtest.WithOrder(tc.order),
				stubtest.WithRuntime("fake", "v9.8.7"),
				stubtest.WithTimeouts(3*time.Second, 1500*time.Millisecond))
			s, p := startStub(t, rt, &creator{})
			if got, want := p.Name(), "10-test"; got != want {
				t.Errorf("runtime saw plugin %q, want %q", got, want)
			}
			if got := s.Name(); got != "10-test" {
				t.Errorf("Name() = %q", got)
			}
			want := api.MaskOf(api.Event_CREATE_CONTAINER)
			if got := p.Events(); got != want {
				t.Errorf("runtime subscribed plugin to %s, want %s", got, want)
			}
			if got := s.Subscription(); got != want {
				t.Errorf("Subscription() = %s, want %s", got, want)
			}
			if got := s.RegistrationTimeout(); got != 3*time.Second {
				t.Errorf("RegistrationTimeout() = %v, want the runtime's 3s", got)
			}
			if got := s.RequestTimeout(); got != 1500*time.Millisecond {
				t.Errorf("RequestTimeout() = %v, want the runtime's 1.5s", got)
			}
			if s.RuntimeName() != "fake" || s.RuntimeVersion() != "v9.8.7" || s.RuntimeNRIVersion() != "v0.12.5" {
				t.Errorf("runtime = %q %q %q", s.RuntimeName(), s.RuntimeVersion(), s.RuntimeNRIVersion())
			}
			rsp, err := p.CreateContainer(testContext(t), pod("p1"), ctr("c1", "p1"))
			if err != nil {
				t.Fatal(err)
			}
			if got := rsp.GetAdjust().GetAnnotations()["seen"]; got != "c1" {
				t.Errorf("adjustment annotation = %q, want c1", got)
			}
		})
	}
}

func TestRegistrationTimeout(t *testing.T) {
	rt := stubtest.NewRuntime(t, stubtest.WithUnansweredRegistration())
	s, _ := newStub(t, rt, &creator{}, stub.WithRegistrationTimeout(200*time.Millisecond))
	start := time.Now()
	err := s.Start(testContext(t))
	if !errors.Is(err, stub.ErrRegistrationTimeout) {
		t.Fatalf("Start = %v, want ErrRegistrationTimeout", err)
	}
	if took := time.Since(start); took < 200*time.Millisecond || took > 5*time.Second {
		t.Errorf("Start returned after %v, want about 200ms", took)
	}
	for _, want := range []string{"answer RegisterPlugin", "send Configure"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if err := s.Wait(); !errors.Is(err, stub.ErrRegistrationTimeout) {
		t.Errorf("Wait after failed Start = %v", err)
	}
}

func TestRegistrationRejected(t *testing.T) {
	const msg = `plugin "10-test" is already registered`
	rt := stubtest.NewRuntime(t, stubtest.WithRejectRegistration(codes.AlreadyExists, msg))
	s, _ := newStub(t, rt, &creator{})
	err := s.Start(testContext(t))
	var re *stub.RegistrationError
	if !errors.As(err, &re) {
		t.Fatalf("Start = %v (%T), want *RegistrationError", err, err)
	}
	if re.Message != msg || re.Code != codes.AlreadyExists {
		t.Errorf("RegistrationError = %q %v, want %q %v", re.Message, re.Code, msg, codes.AlreadyExists)
	}
}

func TestRuntimeRejectsSubscriptionMessageSurfaces(t *testing.T) {
	// The runtime claims NRI v0.12.5 (all events) but accepts fewer: the
	// stub subscribes to UpdatePodSandbox and the nrikit runtime's
	// reason reaches Start.
	rt := stubtest.NewRuntime(t, stubtest.WithAcceptedEvents(mustMask(t, "CreateContainer")))
	s, _ := newStub(t, rt, &podUpdater{})
	err := s.Start(testContext(t))
	var re *stub.RegistrationError
	if !errors.As(err, &re) {
		t.Fatalf("Start = %v, want *RegistrationError", err)
	}
	if re.Code != codes.InvalidArgument || !strings.Contains(re.Message, "does not support: UpdatePodSandbox") {
		t.Errorf("RegistrationError = %v %q", re.Code, re.Message)
	}
}

// blockingConfigure signals when Configure is entered and blocks until
// released or its context ends.
type blockingConfigure struct {
	creator
	entered chan struct{}
	release chan struct{}
}

func (b *blockingConfigure) Configure(ctx context.Context, _, _, _ string) (api.EventMask, error) {
	close(b.entered)
	select {
	case <-b.release:
	case <-ctx.Done():
	}
	return 0, nil
}

func TestRuntimeClosesDuringConfigure(t *testing.T) {
	for _, order := range []stubtest.Order{stubtest.NrikitOrder, stubtest.UpstreamOrder} {
		rt := stubtest.NewRuntime(t, stubtest.WithOrder(order))
		plugin := &blockingConfigure{entered: make(chan struct{}), release: make(chan struct{})}
		defer close(plugin.release)
		s, p := newStub(t, rt, plugin)
		errC := make(chan error, 1)
		go func() { errC <- s.Start(testContext(t)) }()
		select {
		case <-plugin.entered:
		case <-time.After(testTimeout):
			t.Fatal("Configure never called")
		}
		p.Close()
		select {
		case err := <-errC:
			if !errors.Is(err, stub.ErrConnectionLost) || !strings.Contains(err.Error(), "during registration") {
				t.Errorf("order %d: Start = %v, want a lost connection during registration", order, err)
			}
		case <-time.After(testTimeout):
			t.Fatal("Start hangs after the connection closed")
		}
	}
}

// failingConfigure rejects its configuration.
type failingConfigure struct{ creator }

func (failingConfigure) Configure(context.Context, string, string, string) (api.EventMask, error) {
	return 0, errors.New("bad config: missing key")
}

func TestConfigureFailure(t *testing.T) {
	for _, order := range []stubtest.Order{stubtest.NrikitOrder, stubtest.UpstreamOrder} {
		rt := stubtest.NewRuntime(t, stubtest.WithOrder(order), stubtest.WithConfig("x"))
		s, p := newStub(t, rt, &failingConfigure{})
		err := s.Start(testContext(t))
		if err == nil || !strings.Contains(err.Error(), "bad config: missing key") {
			t.Errorf("order %d: Start = %v, want the configuration error", order, err)
		}
		<-p.Done()
		if order == stubtest.NrikitOrder {
			// The runtime received the answer and reported the reason.
			if got := p.Err(); got == nil || !strings.Contains(got.Error(), `plugin "10-test" rejected its configuration: bad config: missing key`) {
				t.Errorf("runtime saw %v", got)
			}
		}
	}
}

func TestStartTwiceAndNotStarted(t *testing.T) {
	rt := stubtest.NewRuntime(t)
	s, _ := newStub(t, rt, &creator{})
	if err := s.Wait(); !errors.Is(err, stub.ErrNotStarted) {
		t.Errorf("Wait before Start = %v", err)
	}
	if _, err := s.UpdateContainers(testContext(t), nil, nil); !errors.Is(err, stub.ErrNotStarted) {
		t.Errorf("UpdateContainers before Start = %v", err)
	}
	if err := s.Start(testContext(t)); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(testContext(t)); !errors.Is(err, stub.ErrAlreadyStarted) {
		t.Errorf("second Start = %v", err)
	}
	s.Stop()
	if err := s.Wait(); err != nil {
		t.Errorf("Wait after Stop = %v, want nil", err)
	}
	if _, err := s.UpdateContainers(testContext(t), nil, nil); !errors.Is(err, stub.ErrClosed) {
		t.Errorf("UpdateContainers after Stop = %v", err)
	}
	// The given connection cannot be reused.
	if err := s.Start(testContext(t)); err == nil || !strings.Contains(err.Error(), "already used") {
		t.Errorf("Start after Stop with a given connection = %v", err)
	}
}
