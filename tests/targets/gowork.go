// A Go program for psup's scenarios (built at test time with Debian's
// golang-go, standard library only): a producer goroutine feeds a channel,
// consumers compute under a sync.Mutex, and a goroutine locked to its OS
// thread returns, so that thread exits (a real thread exit in a static
// binary without libc). Usage: gowork SECONDS
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"
)

var mu sync.Mutex
var total uint64

func work(n int) uint64 {
	var s uint64
	for i := 0; i < n; i++ {
		s += uint64(i)*uint64(i) ^ uint64(i>>3) // MARK:gohot
	}
	return s
}

func producer(ch chan<- int, until time.Time) {
	for time.Now().Before(until) {
		ch <- 20000
	}
	close(ch)
}

func consumer(ch <-chan int, wg *sync.WaitGroup) {
	defer wg.Done()
	for n := range ch {
		s := work(n)
		mu.Lock()
		total += s // MARK:goprogress
		mu.Unlock()
	}
}

func main() {
	secs := 1.0
	if len(os.Args) > 1 {
		secs, _ = strconv.ParseFloat(os.Args[1], 64)
	}
	done := make(chan bool)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with it
		time.Sleep(50 * time.Millisecond)
		done <- true
	}()
	<-done
	ch := make(chan int, 64)
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go consumer(ch, &wg)
	}
	go producer(ch, time.Now().Add(time.Duration(secs*float64(time.Second))))
	wg.Wait()
	fmt.Println(total > 0)
}
